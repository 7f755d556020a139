package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/attack"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/load"
)

// hostileClassResult is one class's row.
type hostileClassResult struct {
	Name      string        `json:"name"`
	Title     string        `json:"title"`
	OpsUnit   string        `json:"ops_unit"`
	FairShare bool          `json:"fair_share"`
	P99Goal   time.Duration `json:"p99_goal_ns"`
	// Ops, Conns and AttackRefused are the attack's tally; Peak the most
	// its level reached (PeakUnit says what it counts, PeakGoal what it
	// must reach), AttackWrong the answers to the class's own honest
	// clients that differed from btcd's.
	Ops           int64  `json:"attack_ops"`
	Conns         int64  `json:"attack_conns"`
	AttackRefused int64  `json:"attack_refused"`
	Peak          int64  `json:"attack_peak,omitempty"`
	PeakGoal      int64  `json:"attack_peak_goal,omitempty"`
	PeakUnit      string `json:"attack_peak_unit,omitempty"`
	AttackWrong   int64  `json:"attack_wrong_answers"`
	// PeakRSS is cfindexd's peak resident set (VmHWM) over its life up to
	// the end of the attack: a fresh process per class, started on the
	// caught-up store.
	PeakRSS int64 `json:"peak_rss_bytes"`
	// Good are the well-behaved clients' views, one per spot.
	Good []attack.SpotResult `json:"good_clients"`
	// Wallet is the honest BIP-37 wallet's (classes with BIP-37 on);
	// WalletRatio its mean batch time over the baseline's.
	Wallet      *load.WalletResult `json:"bip37_wallet,omitempty"`
	WalletRatio float64            `json:"bip37_wallet_ratio,omitempty"`
	// Up is true when cfindexd ran through the attack and exited 0 on
	// SIGTERM.
	Up      bool   `json:"daemon_up"`
	UpError string `json:"daemon_error,omitempty"`
	// HTTPConns is the idle connections the http-idle class aimed for.
	HTTPConns int `json:"http_conns,omitempty"`
	// Counters are cfindexd's non-zero counters of why peers and clients
	// were turned away or slowed, read at the end of the attack.
	Counters map[string]float64 `json:"daemon_counters,omitempty"`
	// Goals are every goal of the class, met or missed.
	Goals []attack.Goal `json:"goals"`
}

// judge fills r.Goals and r.WalletRatio (against baseline, the wallet's
// run without attack; nil when there is none).
func (r *hostileClassResult) judge(class attack.Class, baseline *load.WalletResult) {
	r.Goals, r.WalletRatio = class.Judge(attack.Outcome{PeakRSS: r.PeakRSS, Up: r.Up, Good: r.Good,
		Wallet: r.Wallet, Baseline: baseline, Peak: r.Peak, Wrong: r.AttackWrong})
}

// met tells whether the class met every goal.
func (r hostileClassResult) met() bool { return r.missed() == 0 }

// missed counts the class's missed goals.
func (r hostileClassResult) missed() int {
	n := 0
	for _, g := range r.Goals {
		if !g.Met {
			n++
		}
	}
	return n
}

// goodColumn renders one spot's client for the table: p99 and refusals,
// "–" when the class has no client there.
func (r hostileClassResult) goodColumn(where string) string {
	for _, g := range r.Good {
		if g.Where == where {
			return fmt.Sprintf("%s / %d", latency(g.Latency.P99), g.Refused)
		}
	}
	return "–"
}

// writeTable prints the report.
func (r *hostileReport) writeTable(w io.Writer) error {
	fmt.Fprintf(w, "cfbench hostile: %d blocks (%s chain), filters %.0f bytes on average (%.0f in the tx-rich blocks), %s per class, load average %s before, %s after\n",
		r.Chain.Height+1, r.Chain.Kind, r.FilterSize, r.RichFilterSize, r.Duration, r.LoadBefore, r.LoadAfter)
	if b := r.WalletBaseline; b != nil {
		fmt.Fprintf(w, "honest BIP-37 wallet baseline (BIP-37 on, no attack): %d batches of 10 filtered blocks a second apart, mean %s, p99 %s, %d matched txs, %d refused, %d disconnected, %d wrong\n",
			b.Rounds, dur(b.MeanRound), latency(b.Round.P99), b.MatchedTxs, b.Refused, b.Disconnects, b.Wrong)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "class\tp99 goal\tpeak RSS\tfresh p99 / refused\tfresh v2\tsubnet p99 / refused\taddress p99 / refused\tevicted\twallet ×\tdaemon up\tattack\tgoals\t")
	missed := map[string][]string{}
	for _, c := range r.Classes {
		evicted, wallet := 0, "–"
		for _, g := range c.Good {
			evicted += g.Evicted
		}
		if c.Wallet != nil {
			wallet = fmt.Sprintf("%.2f", c.WalletRatio)
		}
		attackCol := fmt.Sprintf("%d %s / %d conns", c.Ops, c.OpsUnit, c.Conns)
		if c.PeakGoal > 0 {
			attackCol += fmt.Sprintf("; %d %s", c.Peak, c.PeakUnit)
		}
		goals := verdict(c.met())
		if n := c.missed(); n > 0 {
			goals = fmt.Sprintf("%d of %d NOT met", n, len(c.Goals))
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f MB\t%s\t%s\t%s\t%s\t%d\t%s\t%v\t%s\t%s\t\n",
			c.Name, c.P99Goal, mb(c.PeakRSS), c.goodColumn("fresh"), c.goodColumn("fresh-v2"), c.goodColumn("subnet"), c.goodColumn("address"),
			evicted, wallet, c.Up, attackCol, goals)
		for _, g := range c.Goals {
			if !g.Met {
				missed[c.Name] = append(missed[c.Name], fmt.Sprintf("%s: got %s", g.Goal, g.Got))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range r.Classes {
		for _, m := range missed[c.Name] {
			fmt.Fprintf(w, "  %s: NOT met: %s\n", c.Name, m)
		}
		for _, g := range c.Good {
			if g.FirstRefusal != "" {
				fmt.Fprintf(w, "  %s: %s client's first refusal (%d bulk of %d): %s\n", c.Name, g.Where, g.BulkRefused, g.Refused, g.FirstRefusal)
			}
			if g.Latency.P99 > c.P99Goal/2 {
				fmt.Fprintf(w, "  %s: %s client's p99 by request: getcfilters %s, getcfheaders %s, REST filter %s, bulk file %s\n", c.Name, g.Where,
					latency(g.ByKind["getcfilters"].P99), latency(g.ByKind["getcfheaders"].P99), latency(g.ByKind["rest"].P99), latency(g.ByKind["bulk"].P99))
			}
		}
		if len(missed[c.Name]) > 0 && len(c.Counters) > 0 {
			var kv []string
			for _, k := range slices.Sorted(maps.Keys(c.Counters)) {
				kv = append(kv, fmt.Sprintf("%s %g", strings.TrimPrefix(k, "cfindexd_"), c.Counters[k]))
			}
			fmt.Fprintf(w, "  %s: cfindexd's counters: %s\n", c.Name, strings.Join(kv, ", "))
		}
		if b := c.Wallet; b != nil && c.WalletRatio > attack.WalletGoal {
			fmt.Fprintf(w, "  %s: BIP-37 wallet: %d batches, %d filtered blocks received in all, batch p99 %s\n", c.Name, b.Rounds, b.Received, latency(b.Round.P99))
		}
		if c.Wallet != nil && c.Wallet.FirstError != "" {
			fmt.Fprintf(w, "  %s: BIP-37 wallet's first error: %s\n", c.Name, c.Wallet.FirstError)
		}
		if c.UpError != "" {
			fmt.Fprintf(w, "  %s: %s\n", c.Name, c.UpError)
		}
		if c.HTTPConns > 0 {
			fmt.Fprintf(w, "  %s: %d idle connections aimed for (open file limit %d)\n", c.Name, c.HTTPConns, r.NoFile)
		}
	}
	met, all := 0, 0
	for _, c := range r.Classes {
		all++
		if c.met() {
			met++
		}
	}
	fmt.Fprintf(w, "goal: every goal of every class (peak RSS ≤ %d MB, daemon up, good clients never refused, p99 ≤ %s fair-share / %s others, wallet ≤ %.0f× baseline, answers byte-equal): %d of %d classes met\n",
		attack.RSSGoal/1_000_000, attack.FairShareP99Goal, attack.P99Goal, attack.WalletGoal, met, all)
	store := verdict(r.StoreIntact)
	if r.StoreError != "" {
		store += " (" + r.StoreError + ")"
	}
	fmt.Fprintf(w, "goal: store intact (every filter and filter header equal to btcd's): %s\n", store)
	fmt.Fprintf(w, "good clients: fresh = a /16 of its own, fresh v2 = another, over BIP-324 v2 (v2 classes), subnet = another address of the attacker's /16, address = the attacker's address; evicted counts P2P connections ended after being served\n")
	fmt.Fprintf(w, "logs: %s\n", strings.TrimSpace(r.Out))
	return nil
}
