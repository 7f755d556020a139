package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/attack"
)

// TestHostileEveryClass runs cfbench hostile on a small tx-rich chain with
// every attack class for a second and a half each (a few thousand idle HTTP
// connections instead of 20,000): each attack must have run (its tally
// moved), every well-behaved client (one per spot: a fresh /16, the
// attacker's /16, its address where the class is about addresses) must
// have been answered, the honest BIP-37 wallet must have run beside every
// class with BIP-37 on and measured its baseline, no answer may differ from
// btcd's, cfindexd must have stayed up and exited cleanly, and the store
// must equal btcd's index afterwards. Goals of RSS, refusals and latency
// are the benchmark's to report, not this test's: it proves the program
// measures and judges every goal.
func TestHostileEveryClass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs btcd and cfindexd through every attack class")
	}
	if runtime.GOOS != "linux" {
		t.Skip("dialing from 127.x.y.z source addresses needs Linux")
	}
	stdout := runBench(t, t.TempDir(), "hostile", "-chain=rich", "-blocks=120", "-duration=1500ms", "-httpconns=2000", "-json", "-timeout=8m")
	var rep hostileReport
	if err := json.Unmarshal(stdout, &rep); err != nil {
		t.Fatalf("decode report: %v\n%s", err, string(stdout))
	}
	classes := attack.Classes()
	if len(rep.Classes) != len(classes) {
		t.Fatalf("%d classes in the report, want %d", len(rep.Classes), len(classes))
	}
	if b := rep.WalletBaseline; b == nil || b.Rounds == 0 || b.MeanRound <= 0 || b.Wrong != 0 {
		t.Errorf("BIP-37 wallet baseline: %+v", b)
	}
	for i, c := range rep.Classes {
		class := classes[i]
		if c.Ops == 0 || c.Conns == 0 {
			t.Errorf("%s: the attack did nothing: %d %s over %d connections", c.Name, c.Ops, c.OpsUnit, c.Conns)
		}
		if len(c.Good) != len(class.Spots(i)) {
			t.Errorf("%s: %d good clients, want %d", c.Name, len(c.Good), len(class.Spots(i)))
		}
		for _, g := range c.Good {
			// A client behind an address the class has the daemon
			// discourage may be refused throughout: that is a measured
			// miss, not the harness failing. Every client must have run,
			// and those of a /16 of their own must have been answered.
			// A client that starts after the class's short run
			// (AddressAfter) never runs here.
			late := g.Where == "address" && class.AddressAfter > 0
			if !late && g.Requests+g.Refused == 0 || (g.Where == "fresh" && (g.Requests == 0 || g.Latency.P99 <= 0)) {
				t.Errorf("%s: the %s client (%s) got no answer: %+v", c.Name, g.Where, g.IP, g.GoodResult)
			}
			if g.Wrong != 0 {
				t.Errorf("%s: the %s client got %d answers differing from btcd's: %s", c.Name, g.Where, g.Wrong, g.FirstRefusal)
			}
		}
		if (c.Wallet != nil) != class.BIP37() {
			t.Errorf("%s: wallet %+v, want one exactly when BIP-37 is on", c.Name, c.Wallet)
		} else if c.Wallet != nil && c.Wallet.Wrong != 0 {
			t.Errorf("%s: the wallet got answers differing from btcd's: %s", c.Name, c.Wallet.FirstError)
		}
		if c.AttackWrong != 0 {
			t.Errorf("%s: %d answers to the class's honest clients differ from btcd's", c.Name, c.AttackWrong)
		}
		if class.PeakGoal > 0 && c.Peak == 0 {
			t.Errorf("%s: none of its %s", c.Name, class.PeakUnit)
		}
		if !c.Up || c.PeakRSS <= 0 {
			t.Errorf("%s: daemon up %v (%s), peak RSS %d", c.Name, c.Up, c.UpError, c.PeakRSS)
		}
		if want := 3 + 2*len(c.Good); len(c.Goals) < want {
			t.Errorf("%s: %d goals judged, want at least %d: %+v", c.Name, len(c.Goals), want, c.Goals)
		}
		t.Logf("%s: peak RSS %.1f MB, attack %d %s over %d connections (peak %d), %d of %d goals met",
			c.Name, mb(c.PeakRSS), c.Ops, c.OpsUnit, c.Conns, c.Peak, len(c.Goals)-c.missed(), len(c.Goals))
	}
	if !rep.StoreIntact {
		t.Errorf("store not intact after the attacks: %s", rep.StoreError)
	}
	var table bytes.Buffer
	if err := rep.writeTable(&table); err != nil || !strings.Contains(table.String(), "goal: store intact") {
		t.Errorf("table: %v\n%s", err, table.String())
	}
	t.Logf("table:\n%s", table.String())
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
