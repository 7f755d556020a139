package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/attack"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestHostileEveryClass runs cfbench hostile on a small tx-rich chain with
// every attack class for a second and a half each (a few thousand idle HTTP
// connections instead of 20,000): each attack must have run (its tally
// moved), the well-behaved client must have been answered, cfindexd must
// have stayed up and exited cleanly, and the store must equal btcd's
// index afterwards. Goals (RSS, refusals, p99) are the benchmark's to
// report, not this test's: it proves the program measures.
func TestHostileEveryClass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs btcd and cfindexd through every attack class")
	}
	if runtime.GOOS != "linux" {
		t.Skip("dialing from 127.x.y.z source addresses needs Linux")
	}
	stdout := runBench(t, t.TempDir(), "hostile", "-chain=rich", "-blocks=120", "-duration=1500ms", "-httpconns=2000", "-json", "-timeout=5m")
	var rep hostileReport
	if err := json.Unmarshal(stdout, &rep); err != nil {
		t.Fatalf("decode report: %v\n%s", err, string(stdout))
	}
	if len(rep.Classes) != len(attack.Classes()) {
		t.Fatalf("%d classes in the report, want %d", len(rep.Classes), len(attack.Classes()))
	}
	for _, c := range rep.Classes {
		if c.Ops == 0 || c.Conns == 0 {
			t.Errorf("%s: the attack did nothing: %d %s over %d connections", c.Name, c.Ops, c.OpsUnit, c.Conns)
		}
		if c.Good.Requests == 0 || c.Good.Latency.P99 <= 0 {
			t.Errorf("%s: the well-behaved client got no answer: %+v", c.Name, c.Good)
		}
		if !c.Up || c.PeakRSS <= 0 {
			t.Errorf("%s: daemon up %v (%s), peak RSS %d", c.Name, c.Up, c.UpError, c.PeakRSS)
		}
		t.Logf("%s: peak RSS %.1f MB, good client %d requests (p99 %s, %d refused: %s), attack %d %s over %d connections",
			c.Name, mb(c.PeakRSS), c.Good.Requests, dur(c.Good.Latency.P99), c.Good.Refused, c.Good.FirstRefusal, c.Ops, c.OpsUnit, c.Conns)
	}
	if !rep.StoreIntact {
		t.Errorf("store not intact after the attacks: %s", rep.StoreError)
	}
	var table bytes.Buffer
	if err := rep.writeTable(&table); err != nil || !strings.Contains(table.String(), "goal: store intact") {
		t.Errorf("table: %v\n%s", err, table.String())
	}
}

// TestHostileFlagsRejected pins the hostile flags' validation.
func TestHostileFlagsRejected(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-duration=100ms"}, "-duration"},
		{[]string{"-settle=40s"}, "-settle"},
		{[]string{"-httpconns=0"}, "-httpconns"},
		{[]string{"-classes=slot-fill,nonsense"}, "nonsense"},
		{[]string{"-chain=testnet"}, "-chain"},
		{[]string{"-blocks=0"}, "-blocks"},
	} {
		_, err := parseHostileFlags(tc.args, io.Discard)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want a usage error naming %s", tc.args, err, tc.want)
		}
	}
	cfg, err := parseHostileFlags([]string{"-classes=slot-fill, http-idle", "-duration=10s"}, io.Discard)
	if err != nil || len(cfg.Classes) != 2 || cfg.Classes[1].Name != "http-idle" || cfg.Settle != time.Second {
		t.Errorf("classes %v, settle %s, err %v", cfg.Classes, cfg.Settle, err)
	}
}
