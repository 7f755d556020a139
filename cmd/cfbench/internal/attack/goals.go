package attack

import (
	"fmt"
	"time"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/load"
)

// Goals every class is held to, besides its latency goal (P99Goal).
const (
	// RSSGoal bounds cfindexd's peak RSS, in bytes.
	RSSGoal = 250_000_000
	// WalletGoal bounds the honest BIP-37 wallet's mean batch time under
	// attack, as a multiple of its baseline.
	WalletGoal = 3.0
)

// Goal is one goal of one class: what it asks, what was measured, and
// whether that meets it.
type Goal struct {
	Goal string `json:"goal"`
	Got  string `json:"got"`
	Met  bool   `json:"met"`
}

// SpotResult is one well-behaved client's view of a class.
type SpotResult struct {
	Spot
	GoodResult
}

// Outcome is what one run of a class measured, for Judge.
type Outcome struct {
	PeakRSS int64
	Up      bool
	Good    []SpotResult
	// Wallet is the honest BIP-37 wallet's result (nil when BIP-37 is
	// off), Baseline its run without attack.
	Wallet, Baseline *load.WalletResult
	// Peak and Wrong are the attack tally's.
	Peak, Wrong int64
}

// Judge returns every goal of the class, met or missed, and the wallet's
// mean batch time over its baseline's (0 without both).
func (c Class) Judge(o Outcome) ([]Goal, float64) {
	var goals []Goal
	add := func(ok bool, got, goal string, a ...any) {
		goals = append(goals, Goal{Goal: fmt.Sprintf(goal, a...), Got: got, Met: ok})
	}
	add(o.PeakRSS > 0 && o.PeakRSS <= RSSGoal, fmt.Sprintf("%.1f MB", float64(o.PeakRSS)/1e6), "peak RSS ≤ %d MB", RSSGoal/1_000_000)
	add(o.Up, fmt.Sprint(o.Up), "daemon up and exits cleanly")
	wrong, evicted := o.Wrong, 0
	for _, g := range o.Good {
		add(g.Refused == 0 && g.Requests > 0, fmt.Sprintf("%d refused, %d answered", g.Refused, g.Requests), "%s client (%s) never refused", g.Where, g.IP)
		add(g.Requests > 0 && g.Latency.P99 <= c.P99Goal(), roundLatency(g.Latency.P99), "%s client p99 ≤ %s", g.Where, c.P99Goal())
		wrong += int64(g.Wrong)
		evicted += g.Evicted
	}
	if c.NoEviction {
		add(evicted == 0, fmt.Sprint(evicted), "good clients never evicted once served")
	}
	if c.PeakGoal > 0 {
		add(o.Peak >= c.PeakGoal, fmt.Sprint(o.Peak), "%s ≥ %d", c.PeakUnit, c.PeakGoal)
	}
	ratio := 0.0
	if w := o.Wallet; w != nil {
		wrong += int64(w.Wrong)
		if o.Baseline != nil && o.Baseline.MeanRound > 0 {
			ratio = float64(w.MeanRound) / float64(o.Baseline.MeanRound)
		}
		add(w.Rounds > 0 && ratio > 0 && ratio <= WalletGoal,
			fmt.Sprintf("%.2f× (%s a batch over %d batches)", ratio, roundLatency(w.MeanRound), w.Rounds), "BIP-37 wallet ≤ %.0f× its baseline", WalletGoal)
		add(w.Refused+w.Disconnects == 0, fmt.Sprintf("%d refused, %d disconnected", w.Refused, w.Disconnects), "BIP-37 wallet never refused or disconnected")
	}
	add(wrong == 0, fmt.Sprint(wrong), "every answer byte-equal to btcd's")
	return goals, ratio
}

// roundLatency renders a latency to three significant digits or so.
func roundLatency(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}
