package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/load"
)

// TestServeTinyChain runs the serve benchmark with a few peers for a second
// on a 150-block tx-rich chain, two rounds of cfindexd over v1 and over v2
// (BIP-324): both servers must
// answer every request (each byte checked against btcd's filters) and the
// report must be consistent.
func TestServeTinyChain(t *testing.T) {
	stdout := runBench(t, t.TempDir(), "serve", "-blocks=150", "-peers=5", "-warmup=200ms", "-duration=1s", "-rounds=2", "-transport=both", "-json", "-timeout=2m")
	var rep serveReport
	if err := json.Unmarshal(stdout, &rep); err != nil {
		t.Fatalf("decode report: %v\n%s", err, string(stdout))
	}
	if len(rep.CFIndexdRuns) != 2 || len(rep.BaselineRuns) != 0 {
		t.Errorf("%d cfindexd rounds and %d baseline rounds, want 2 and 0", len(rep.CFIndexdRuns), len(rep.BaselineRuns))
	}
	for name, l := range map[string]load.Result{"cfindexd": rep.CFIndexd, "btcd": rep.Btcd} {
		if l.Errors != 0 || l.FilterReqs == 0 || l.HeaderReqs == 0 || l.Filters == 0 || l.FilterHashes == 0 || l.FiltersPerS <= 0 {
			t.Errorf("%s: %+v", name, l)
		}
		if l.RunFilters < l.Filters || l.ServerNsPerFilter <= 0 || l.ClientNsPerFilter <= 0 {
			t.Errorf("%s: %d filters in the run (%d in the window), %.0f ns server and %.0f ns client CPU a filter", name, l.RunFilters, l.Filters, l.ServerNsPerFilter, l.ClientNsPerFilter)
		}
		if l.FilterLatency.P50 <= 0 || l.FilterLatency.P99 < l.FilterLatency.P50 || l.FilterLatency.Max < l.FilterLatency.P99 {
			t.Errorf("%s: getcfilters latency %+v", name, l.FilterLatency)
		}
	}
	if c := rep.Transports; c == nil || len(c.V1Runs) != 2 || len(c.V2Runs) != 2 || c.V2.Errors != 0 || c.V2.Filters == 0 || c.V2.HeaderReqs == 0 || c.Ratio <= 0 {
		t.Errorf("v1 and v2 compared: %+v", c)
	}
	if !rep.Summary.Clean || rep.Summary.ThroughputRatio <= 0 || rep.CFIndexdPeakRSS <= 0 {
		t.Errorf("summary %+v, cfindexd peak RSS %d", rep.Summary, rep.CFIndexdPeakRSS)
	}
}

// TestServeFlagsRejected pins the serve flags' validation.
func TestServeFlagsRejected(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-peers=0"}, "-peers"},
		{[]string{"-duration=10ms"}, "-duration"},
		{[]string{"-warmup=-1s"}, "-warmup"},
		{[]string{"-filtershare=1.5"}, "-filtershare"},
		{[]string{"-reqtimeout=0s"}, "-reqtimeout"},
		{[]string{"-blocks=0"}, "-blocks"},
		{[]string{"-rounds=0"}, "-rounds"},
		{[]string{"-transport=v3"}, "-transport"},
		{[]string{"-baseline=/nonexistent/cfindexd"}, "-baseline"},
	} {
		_, err := parseServeFlags(tc.args, io.Discard)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want a usage error naming %s", tc.args, err, tc.want)
		}
	}
}

// A report's figures are the median round's, and its ratios to the
// baseline the medians of the rounds' own.
func TestServeReportMedians(t *testing.T) {
	run := func(fps, nsPerFilter float64) load.Result {
		return load.Result{FiltersPerS: fps, ServerNsPerFilter: nsPerFilter, FilterReqs: 1, FilterLatency: load.LatencyStats{P99: time.Duration(1e9 / fps)}}
	}
	rep := &serveReport{
		CFIndexdRuns: []load.Result{run(300, 100), run(100, 300), run(200, 200)},
		BaselineRuns: []load.Result{run(100, 400), run(80, 500), run(50, 700)},
		Btcd:         run(10, 9000),
	}
	rep.summarize()
	if rep.CFIndexd.FiltersPerS != 200 || rep.Baseline.FiltersPerS != 80 {
		t.Fatalf("medians %v and %v, want 200 and 80", rep.CFIndexd.FiltersPerS, rep.Baseline.FiltersPerS)
	}
	// Per-round ratios 3, 1.25, 4; CPU ratios 4, 1.67, 3.5.
	if rep.Summary.BaselineRatio != 3 || rep.Summary.BaselineCPURatio != 3.5 {
		t.Fatalf("ratios %+v", rep.Summary)
	}
	var out bytes.Buffer
	if err := rep.writeTable(&out); err != nil || !strings.Contains(out.String(), "ratio cfindexd/baseline") {
		t.Fatalf("table: %v\n%s", err, out.String())
	}
}
