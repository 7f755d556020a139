package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSyncTinyChain runs the whole sync benchmark on a 150-block tx-rich
// chain, the way `go run ./cmd/cfbench sync -json` does, so the program
// cannot rot: every stage must succeed and the report must be consistent.
func TestSyncTinyChain(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"sync", "-blocks=150", "-runs=2", "-json", "-top=5", "-timeout=2m", "-out=" + out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr.String())
	}
	var rep syncReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("decode report: %v\n%s", err, stdout.String())
	}
	s := rep.Summary
	// btcdtest mines ~300 empty blocks (maturity, segwit/taproot) first.
	if rep.Chain.RichBlocks != 150 || rep.Chain.Height < 250 || s.Blocks != int(rep.Chain.Height)+1 {
		t.Errorf("chain %+v, summary blocks %d", rep.Chain, s.Blocks)
	}
	if len(rep.Daemon) != 2 || len(rep.Btcd) != 2 || rep.InProcess == nil {
		t.Fatalf("runs: %d cfindexd, %d btcd, in-process %v", len(rep.Daemon), len(rep.Btcd), rep.InProcess != nil)
	}
	d, b, p := rep.Daemon[0], rep.Btcd[0], rep.InProcess
	if d.CatchUp <= 0 || d.CPU <= 0 || d.PeakRSS <= 0 || d.Lifetime < d.CatchUp {
		t.Errorf("cfindexd run %+v", d)
	}
	if b.CatchUp <= 0 || b.FromStart < b.CatchUp || b.FromHeight != -1 || b.ToHeight != int(rep.Chain.Height) {
		t.Errorf("btcd run %+v, chain height %d", b, rep.Chain.Height)
	}
	if !p.Verified || p.Blocks != s.Blocks || p.Elements <= int64(s.Blocks) || p.FilterBytes <= 0 {
		t.Errorf("in-process run %+v", p)
	}
	if len(rep.Floor) != 2 || rep.Floor[0].Wall <= 0 || rep.Floor[0].CPU <= 0 || s.Floor <= 0 || s.CatchUpOverFloor <= 0 {
		t.Errorf("node floor runs %+v, summary floor %s, catch-up/floor %.2f", rep.Floor, s.Floor, s.CatchUpOverFloor)
	}
	if s.Ratio <= 0 || s.CFIndexdBlocksPerS <= 0 || s.CFIndexdElemsPerS <= 0 {
		t.Errorf("summary %+v", s)
	}
	for _, name := range []string{"cpu.pprof", "cpu-top.txt", "cpu-top-cum.txt", "cfindexd-run1.log", "btcd.out.log"} {
		if fi, err := os.Stat(filepath.Join(out, name)); err != nil || fi.Size() == 0 {
			t.Errorf("output %s missing or empty: %v", name, err)
		}
	}
	if len(p.Top) < 3 || !strings.Contains(strings.Join(p.Top, "\n"), "flat%") {
		t.Errorf("profile top %q", p.Top)
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
