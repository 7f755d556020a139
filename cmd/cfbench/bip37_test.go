package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/load"
	"io"
	"strings"
	"testing"
)

// TestBIP37TinyChain runs the bip37 benchmark small: a few BIP-157 peers
// alone and then beside a few BIP-37 wallets on a 150-block tx-rich chain.
// Every BIP-157 answer is checked against the chain and every BIP-37 batch
// must bring one merkleblock per block asked; the report must be
// consistent, with cfindexd's own count of BIP-37 work and its RSS.
func TestBIP37TinyChain(t *testing.T) {
	stdout := runBench(t, t.TempDir(), "bip37", "-blocks=150", "-peers=4", "-bloompeers=4", "-batch=20", "-warmup=200ms", "-duration=1s", "-rounds=2",
		"-json", "-timeout=3m")
	var rep bip37Report
	if err := json.Unmarshal(stdout, &rep); err != nil {
		t.Fatalf("decode report: %v\n%s", err, string(stdout))
	}
	for name, l := range map[string]load.Result{"alone": rep.Alone, "mixed": rep.Mixed} {
		if l.Errors != 0 || l.FilterReqs == 0 || l.HeaderReqs == 0 || l.FiltersPerS <= 0 {
			t.Errorf("BIP-157 %s: %+v", name, l)
		}
	}
	b := rep.BIP37
	if b.Errors != 0 || b.Batches == 0 || b.FilteredBlocks != int64(b.Batches)*20 || b.BlocksPerS <= 0 || b.FilterBytes == 0 || b.FilterHashes == 0 {
		t.Errorf("BIP-37: %+v", b)
	}
	if b.BatchLatency.P50 <= 0 || b.BatchLatency.P99 < b.BatchLatency.P50 {
		t.Errorf("BIP-37 batch latency %+v", b.BatchLatency)
	}
	if rep.BloomWorkSeconds <= 0 || rep.MixedMaxRSS <= 0 || rep.PeakRSS < rep.MixedMaxRSS/2 || rep.Window != 150 || rep.AvgBlockBytes <= 0 {
		t.Errorf("report: work %v s, RSS %d (peak %d), window %d, block bytes %d", rep.BloomWorkSeconds, rep.MixedMaxRSS, rep.PeakRSS, rep.Window, rep.AvgBlockBytes)
	}
	if len(rep.Ratios) != 2 || rep.Ratios[0] <= 0 || rep.Ratios[1] <= 0 {
		t.Errorf("round ratios %v", rep.Ratios)
	}
	if !rep.Summary.Clean || rep.Summary.ThroughputRatio <= 0 {
		t.Errorf("summary %+v", rep.Summary)
	}
	var table bytes.Buffer
	if err := rep.writeTable(&table); err != nil || !strings.Contains(table.String(), "goal: BIP-157 with BIP-37") {
		t.Errorf("table: %v\n%s", err, table.String())
	}
}

// TestBIP37FlagsRejected pins the bip37 flags' validation.
func TestBIP37FlagsRejected(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-peers=0"}, "-peers"},
		{[]string{"-bloompeers=0"}, "-bloompeers"},
		{[]string{"-batch=0"}, "-batch"},
		{[]string{"-bloomwindow=-1"}, "-bloomwindow"},
		{[]string{"-walletn=0"}, "-walletn"},
		{[]string{"-fpr=1"}, "-fpr"},
		{[]string{"-bloomcpu=101"}, "-bloomcpu"},
		{[]string{"-duration=10ms"}, "-duration"},
		{[]string{"-rounds=0"}, "-rounds"},
		{[]string{"-blocks=0"}, "-blocks"},
	} {
		_, err := parseBIP37Flags(tc.args, io.Discard)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want a usage error naming %s", tc.args, err, tc.want)
		}
	}
}
