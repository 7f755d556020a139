package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestServeTinyChain runs the serve benchmark with a few peers for a second
// on a 150-block tx-rich chain: both servers must answer every request
// (each checked against the chain's block hashes) and the report must be
// consistent.
func TestServeTinyChain(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"serve", "-blocks=150", "-peers=5", "-warmup=200ms", "-duration=1s", "-json", "-timeout=2m", "-out=" + t.TempDir()}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr.String())
	}
	var rep serveReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("decode report: %v\n%s", err, stdout.String())
	}
	for name, l := range map[string]loadResult{"cfindexd": rep.CFIndexd, "btcd": rep.Btcd} {
		if l.Errors != 0 || l.FilterReqs == 0 || l.HeaderReqs == 0 || l.Filters == 0 || l.FilterHashes == 0 || l.FiltersPerS <= 0 {
			t.Errorf("%s: %+v", name, l)
		}
		if l.FilterLatency.P50 <= 0 || l.FilterLatency.P99 < l.FilterLatency.P50 || l.FilterLatency.Max < l.FilterLatency.P99 {
			t.Errorf("%s: getcfilters latency %+v", name, l.FilterLatency)
		}
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
	} {
		_, err := parseServeFlags(tc.args, io.Discard)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want a usage error naming %s", tc.args, err, tc.want)
		}
	}
}
