package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/chains"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSyncTinyMainnetChain runs the whole sync benchmark on a tiny
// mainnet-shaped chain generated into a fresh cache (3 blocks of 60
// transactions on top of the ~300 activation blocks), the way
// `go run ./cmd/cfbench sync -json` does, so neither the generator nor the
// program can rot: every stage must succeed (the chain written as Core's
// blocks directory for the blocks-dir source, the recorded Core v31
// directory indexed in process), every store must equal btcd's index (or
// Core's filters) and the report must be consistent.
func TestSyncTinyMainnetChain(t *testing.T) {
	out := t.TempDir()
	stdout := runBench(t, out, "sync", "-chain=mainnet", "-blocks=3", "-txs=60", "-oldcoins=1200", "-runs=1", "-json", "-top=5",
		"-timeout=3m", "-cache="+t.TempDir())
	var rep syncReport
	if err := json.Unmarshal(stdout, &rep); err != nil {
		t.Fatalf("decode report: %v\n%s", err, string(stdout))
	}
	s, c := rep.Summary, rep.Chain
	if c.Kind != chains.Mainnet || c.Cached || c.Mainnet == nil || c.RichBlocks != 3 || c.Mainnet.Txs != 180 ||
		s.Blocks != int(c.Height)+1 || int32(c.Height) != c.Mainnet.Height || s.Bytes != c.Mainnet.ChainBytes {
		t.Errorf("chain %+v, summary %+v", c, s)
	}
	if len(rep.Btcd) != 1 || rep.InProcess == nil || len(rep.Sources) != 3 {
		t.Fatalf("runs: %d btcd, in-process %v, %d sources", len(rep.Btcd), rep.InProcess != nil, len(rep.Sources))
	}
	if d := rep.BlocksDir; d == nil || d.Blocks != s.Blocks || d.Files != 1 || d.BlkBytes < s.Bytes || d.RevBytes <= 0 || d.Took <= 0 {
		t.Errorf("blocks dir %+v, chain of %d blocks, %d bytes", d, s.Blocks, s.Bytes)
	}
	if f := rep.Fixture; f == nil || !f.Verified || f.Blocks != 201 || f.Stale != 3 || len(f.Runs) != 1 || f.Wall <= 0 ||
		f.Runs[0].FromFiles < 201 || f.Runs[0].FromFallback != 0 || f.Elements <= 201 || f.BlockBytes <= 0 {
		t.Errorf("Core fixture run %+v", f)
	}
	// Which source is fastest on a chain this small is not the test's to
	// say (fixed costs dominate): only that the figures are there.
	if s.Best == "" || s.BestRatio <= 0 || s.BlocksDirOverP2P <= 0 {
		t.Errorf("best source %s (ratio %.2f), blocks dir over txindex-p2p %.2f", s.Best, s.BestRatio, s.BlocksDirOverP2P)
	}
	if b := rep.Btcd[0]; b.CatchUp <= 0 || b.FromStart < b.CatchUp || b.FromHeight != -1 || b.ToHeight != int(c.Height) {
		t.Errorf("btcd run %+v, chain height %d", b, c.Height)
	}
	if p := rep.InProcess; !p.Verified || p.Blocks != s.Blocks || p.Elements <= int64(s.Blocks) || p.FilterBytes <= 0 ||
		p.BlockBytes != s.Bytes || p.FromCache == 0 || len(p.Top) < 3 || !strings.Contains(strings.Join(p.Top, "\n"), "flat%") {
		t.Errorf("in-process run %+v", p)
	}
	for i, name := range []string{"txindex-p2p", "txindex-rpc", "blocksdir"} {
		sr := rep.Sources[i]
		m := sr.Summary
		if sr.Name != name || len(sr.Runs) != 1 || len(sr.Floor) != 1 || !m.Verified {
			t.Errorf("source %d: %s, %d runs, %d floor runs, verified %v", i, sr.Name, len(sr.Runs), len(sr.Floor), m.Verified)
			continue
		}
		d := sr.Runs[0]
		if d.CatchUp <= 0 || d.CPU <= 0 || d.PeakRSS <= 0 || d.Lifetime < d.CatchUp || len(d.RSS) == 0 || d.GC.Cycles == 0 || d.GC.MaxLive <= 0 {
			t.Errorf("%s: cfindexd run %+v", name, d)
		}
		// The blocks-dir source has no script cache: its share is -1.
		if cached := name != "blocksdir"; m.BlocksPerS <= 0 || m.MBPerS <= 0 || m.ElementsPerS <= 0 || m.CPUPerBlock <= 0 || m.Ratio <= 0 ||
			m.Floor <= 0 || m.CatchUpOverFloor <= 0 || (m.PrevoutCachePct > 0) != cached || m.PeakAnon <= 0 || m.PeakRSS < m.PeakAnon {
			t.Errorf("%s: summary %+v", name, m)
		}
	}
	for _, name := range []string{"cpu.pprof", "cpu-top.txt", "cpu-top-cum.txt", "cfindexd-txindex-p2p-run1.log", "cfindexd-txindex-rpc-run1.log",
		"cfindexd-blocksdir-run1.log", "btcd.out.log"} {
		if fi, err := os.Stat(filepath.Join(out, name)); err != nil || fi.Size() == 0 {
			t.Errorf("output %s missing or empty: %v", name, err)
		}
	}
	var table bytes.Buffer
	if err := rep.writeTable(&table); err != nil || !strings.Contains(table.String(), "mainnet-shaped") ||
		!strings.Contains(table.String(), "RSS over the first run") || !strings.Contains(table.String(), "Core v31 fixture") ||
		!strings.Contains(table.String(), "blocks dir at least 5×") {
		t.Errorf("table (%v):\n%s", err, table.String())
	}
}

// TestSyncFlagsRejected pins flag validation: bad values are usage errors
// (exit 2) named in one line, before anything starts.
func TestSyncFlagsRejected(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-blocks=0"}, "-blocks"},
		{[]string{"-blocks=2000"}, "blocks"},
		{[]string{"-txs=5"}, "-txs"},
		{[]string{"-chain=regtest"}, "-chain"},
		{[]string{"-sources=nosuch"}, "-sources"},
		{[]string{"-sources=txindex-rpc", "-profilesource=blocksdir"}, "-profilesource"},
		{[]string{"-sources=txindex-rpc,txindex-rpc"}, "twice"},
		{[]string{"-runs=0"}, "-runs"},
		{[]string{"-workers=65"}, "-workers"},
		{[]string{"-batchblocks=0"}, "-batchblocks"},
		{[]string{"-timeout=0s"}, "-timeout"},
		{[]string{"-cfindexd=/nonexistent/cfindexd"}, "-cfindexd"},
		{[]string{"-nosuchflag"}, "nosuchflag"},
		{[]string{"extra"}, "unexpected argument"},
	} {
		_, err := parseSyncFlags(tc.args, io.Discard)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want a usage error naming %s", tc.args, err, tc.want)
		}
	}
	var stderr bytes.Buffer
	if code := run([]string{"sync", "-blocks=-1"}, io.Discard, &stderr); code != 2 {
		t.Errorf("exit %d for a bad flag, want 2; stderr %q", code, stderr.String())
	}
	if code := run([]string{"nosuch"}, io.Discard, io.Discard); code != 2 {
		t.Errorf("exit %d for an unknown subcommand, want 2", code)
	}
}
