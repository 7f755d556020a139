package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/attack"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/load"
)

// TestHostileJudge pins which goals a class's row misses, from rows made
// up to miss one goal each (and one that meets them all).
func TestHostileJudge(t *testing.T) {
	lockout := attack.Class{Name: "lockout", Home: "127.140.0.1", AboutAddress: true, NoEviction: true, PeakGoal: 200, PeakUnit: "held"}
	fair := attack.Class{Name: "fair", Home: "127.110.0.1", FairShare: true, Flags: []string{attack.BloomFlag}}
	good := func(where string, p99 time.Duration) attack.SpotResult {
		return attack.SpotResult{Spot: attack.Spot{Where: where, IP: "127.0.0.1"},
			GoodResult: attack.GoodResult{Requests: 10, Latency: load.LatencyStats{Count: 10, P99: p99}}}
	}
	baseline := &load.WalletResult{Rounds: 10, MeanRound: 100 * time.Millisecond}
	wallet := func(mean time.Duration, disconnects int) *load.WalletResult {
		return &load.WalletResult{Rounds: 5, MeanRound: mean, Disconnects: disconnects}
	}
	row := func(c attack.Class, mod func(r *hostileClassResult)) hostileClassResult {
		r := hostileClassResult{Name: c.Name, P99Goal: c.P99Goal(), PeakRSS: 100e6, Up: true, Peak: 200}
		for _, s := range c.Spots(0) {
			r.Good = append(r.Good, good(s.Where, 100*time.Millisecond))
		}
		if c.BIP37() {
			r.Wallet = wallet(200*time.Millisecond, 0)
		}
		mod(&r)
		return r
	}
	for _, tc := range []struct {
		name   string
		class  attack.Class
		mod    func(r *hostileClassResult)
		missed []string
	}{
		{"all met", lockout, func(*hostileClassResult) {}, nil},
		{"all met, BIP-37", fair, func(*hostileClassResult) {}, nil},
		{"RSS", lockout, func(r *hostileClassResult) { r.PeakRSS = 251e6 }, []string{"peak RSS ≤ 250 MB"}},
		{"down", lockout, func(r *hostileClassResult) { r.Up = false }, []string{"daemon up and exits cleanly"}},
		{"refused behind the address", lockout, func(r *hostileClassResult) { r.Good[2].Refused = 3 },
			[]string{"address client (127.0.0.1) never refused"}},
		{"never answered", lockout, func(r *hostileClassResult) { r.Good[1] = attack.SpotResult{Spot: r.Good[1].Spot} },
			[]string{"subnet client (127.0.0.1) never refused", "subnet client p99 ≤ 2s"}},
		{"fair share p99", fair, func(r *hostileClassResult) { r.Good[0] = good("fresh", 600*time.Millisecond) },
			[]string{"fresh client p99 ≤ 500ms"}},
		{"same p99 within the lockout goal", lockout, func(r *hostileClassResult) { r.Good[0] = good("fresh", 600*time.Millisecond) }, nil},
		{"evicted", lockout, func(r *hostileClassResult) { r.Good[0].Evicted = 2 }, []string{"good clients never evicted once served"}},
		{"peak", lockout, func(r *hostileClassResult) { r.Peak = 199 }, []string{"held ≥ 200"}},
		{"wrong answer", lockout, func(r *hostileClassResult) { r.AttackWrong = 1 }, []string{"every answer byte-equal to btcd's"}},
		{"slow wallet", fair, func(r *hostileClassResult) { r.Wallet = wallet(301*time.Millisecond, 0) }, []string{"BIP-37 wallet ≤ 3× its baseline"}},
		{"stuck wallet", fair, func(r *hostileClassResult) { r.Wallet = &load.WalletResult{MeanRound: time.Second} }, []string{"BIP-37 wallet ≤ 3× its baseline"}},
		{"disconnected wallet", fair, func(r *hostileClassResult) { r.Wallet = wallet(200*time.Millisecond, 1) },
			[]string{"BIP-37 wallet never refused or disconnected"}},
		{"wrong wallet answer", fair, func(r *hostileClassResult) { r.Wallet.Wrong = 1 }, []string{"every answer byte-equal to btcd's"}},
	} {
		r := row(tc.class, tc.mod)
		r.judge(tc.class, baseline)
		var missed []string
		for _, g := range r.Goals {
			if !g.Met {
				missed = append(missed, g.Goal)
			}
		}
		if !slices.Equal(missed, tc.missed) {
			t.Errorf("%s: missed %q, want %q", tc.name, missed, tc.missed)
		}
		if r.met() != (len(tc.missed) == 0) {
			t.Errorf("%s: met %v", tc.name, r.met())
		}
		rep := hostileReport{Classes: []hostileClassResult{r}, WalletBaseline: baseline}
		var table bytes.Buffer
		if err := rep.writeTable(&table); err != nil {
			t.Fatal(err)
		}
		for _, m := range tc.missed {
			if !strings.Contains(table.String(), "NOT met: "+m) {
				t.Errorf("%s: the table does not name the missed goal %q:\n%s", tc.name, m, table.String())
			}
		}
	}
}
