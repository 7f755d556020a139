package spbench

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/daemon"
)

// GoalRatio is issue 19's goal: the catch-up with the index on at least
// 60 % of the blocks/s without it.
const GoalRatio = 0.60

// Comparison is one source's catch-ups without and with the index, run in
// alternation in the same invocation (Off[i] then On[i]), and the
// background build of the index on a store built without it.
type Comparison struct {
	Source string `json:"source"`
	Title  string `json:"title"`
	// Off are the catch-ups without the index (the sync benchmark's own
	// runs of the source); On those with --silentpayments, each followed
	// by the check of the index it built (Checks[i]).
	Off    []daemon.Result `json:"off_runs"`
	On     []daemon.Result `json:"on_runs"`
	Checks []IndexCheck    `json:"on_checks"`
	// Backfill is a restart with --silentpayments on the store of the
	// last run without it, measured from process start to the background
	// build's line reporting the tip; BackfillCheck its index's check.
	Backfill      *daemon.Result `json:"backfill,omitempty"`
	BackfillCheck *IndexCheck    `json:"backfill_check,omitempty"`
	Summary       Summary        `json:"summary"`
}

// Summary holds a comparison's medians, ratio and goal checks.
type Summary struct {
	// OffBlocksPerS and OnBlocksPerS are the median catch-ups' rates;
	// Ratio is on over off (goal: GoalRatio).
	OffBlocksPerS float64 `json:"off_blocks_per_s"`
	OnBlocksPerS  float64 `json:"on_blocks_per_s"`
	Ratio         float64 `json:"ratio"`
	// OffCPUPerBlock and OnCPUPerBlock are cfindexd's median CPU seconds
	// per block.
	OffCPUPerBlock float64 `json:"off_cpu_s_per_block"`
	OnCPUPerBlock  float64 `json:"on_cpu_s_per_block"`
	// CPURatio is off's CPU per block over on's: the rate ratio a
	// CPU-bound catch-up would show on a machine of its own, which wall
	// times on a shared one do not.
	CPURatio float64 `json:"cpu_ratio"`
	// Tweaks are the transactions with a tweak in the index;
	// TweakTxPerCoreS is Tweaks over the CPU the index added (median on
	// minus median off): transactions with a tweak per second of one
	// core; TweakCPUPerTx is its inverse.
	Tweaks          int64         `json:"tweaks"`
	TweakTxPerCoreS float64       `json:"tweak_tx_per_core_s"`
	TweakCPUPerTx   time.Duration `json:"tweak_cpu_per_tx_ns"`
	// OffPeakRSS and OnPeakRSS are the largest over the runs; RSSBudget
	// the budget they are held to.
	OffPeakRSS int64 `json:"off_peak_rss_bytes"`
	OnPeakRSS  int64 `json:"on_peak_rss_bytes"`
	RSSBudget  int64 `json:"rss_budget_bytes"`
	// BackfillBlocksPerS is the background build's rate over the blocks
	// it indexed, BackfillTweakTxPerCoreS its tweaks per CPU second of
	// the whole process.
	BackfillBlocksPerS      float64 `json:"backfill_blocks_per_s"`
	BackfillTweakTxPerCoreS float64 `json:"backfill_tweak_tx_per_core_s"`
	MeetsRatio              bool    `json:"meets_ratio_goal"`
	MeetsRSS                bool    `json:"meets_rss_goal"`
}

// Summarize fills c.Summary for a chain of blocks blocks (genesis to
// tip) and the RSS budget in bytes.
func (c *Comparison) Summarize(blocks int, rssBudget int64) {
	s := &c.Summary
	n := float64(blocks)
	off, on := medianDur(c.Off, catchUp), medianDur(c.On, catchUp)
	if off > 0 && on > 0 {
		s.OffBlocksPerS, s.OnBlocksPerS = n/off.Seconds(), n/on.Seconds()
		s.Ratio = s.OnBlocksPerS / s.OffBlocksPerS
	}
	offCPU, onCPU := medianDur(c.Off, cpu), medianDur(c.On, cpu)
	s.OffCPUPerBlock, s.OnCPUPerBlock = offCPU.Seconds()/n, onCPU.Seconds()/n
	if onCPU > 0 {
		s.CPURatio = offCPU.Seconds() / onCPU.Seconds()
	}
	if len(c.Checks) > 0 {
		s.Tweaks = c.Checks[0].Tweaks
	}
	if extra := onCPU - offCPU; extra > 0 && s.Tweaks > 0 {
		s.TweakTxPerCoreS = float64(s.Tweaks) / extra.Seconds()
		s.TweakCPUPerTx = extra / time.Duration(s.Tweaks)
	}
	for _, r := range c.Off {
		s.OffPeakRSS = max(s.OffPeakRSS, r.PeakRSS)
	}
	for _, r := range c.On {
		s.OnPeakRSS = max(s.OnPeakRSS, r.PeakRSS)
	}
	s.RSSBudget = rssBudget
	if b, k := c.Backfill, c.BackfillCheck; b != nil && k != nil && b.CatchUp > 0 {
		s.BackfillBlocksPerS = float64(k.Blocks) / b.CatchUp.Seconds()
		s.BackfillTweakTxPerCoreS = float64(k.Tweaks) / b.CPU.Seconds()
	}
	s.MeetsRatio = s.Ratio >= GoalRatio
	s.MeetsRSS = s.OnPeakRSS > 0 && s.OnPeakRSS <= rssBudget && (c.Backfill == nil || c.Backfill.PeakRSS <= rssBudget)
}

// WriteTable prints the comparison for people.
func (c *Comparison) WriteTable(w io.Writer) {
	s := c.Summary
	fmt.Fprintf(w, "\nsilent-payment index, %s (runs alternate without / with --silentpayments):\n", c.Title)
	fmt.Fprintf(w, "  without: %.0f blocks/s, CPU %.2f ms/block, peak RSS %.1f MB; catch-ups %s\n",
		s.OffBlocksPerS, 1000*s.OffCPUPerBlock, mb(s.OffPeakRSS), runList(c.Off))
	fmt.Fprintf(w, "  with:    %.0f blocks/s, CPU %.2f ms/block, peak RSS %.1f MB; catch-ups %s\n",
		s.OnBlocksPerS, 1000*s.OnCPUPerBlock, mb(s.OnPeakRSS), runList(c.On))
	fmt.Fprintf(w, "  goal: with ≥ %.0f %% of the rate without\t%s (%.1f %%; CPU per block without over with: %.1f %%)\n",
		100*GoalRatio, verdict(s.MeetsRatio), 100*s.Ratio, 100*s.CPURatio)
	fmt.Fprintf(w, "  tweak work: %d transactions with a tweak, %.0f per second per core (%.1f µs of CPU each, the CPU with the index minus without)\n",
		s.Tweaks, s.TweakTxPerCoreS, float64(s.TweakCPUPerTx)/1e3)
	if b, k := c.Backfill, c.BackfillCheck; b != nil && k != nil {
		fmt.Fprintf(w, "  background build on a store without the index: %d blocks in %s, %.0f blocks/s, CPU %s (%.0f tweaks per second per core), peak RSS %.1f MB\n",
			k.Blocks, dur(b.CatchUp), s.BackfillBlocksPerS, dur(b.CPU), s.BackfillTweakTxPerCoreS, mb(b.PeakRSS))
	}
	fmt.Fprintf(w, "  goal: peak RSS ≤ %.0f MB with the index\t%s\n", mb(s.RSSBudget), verdict(s.MeetsRSS))
	for i, k := range c.Checks {
		fmt.Fprintf(w, "  index of run %d: %s\n", i+1, k.String())
	}
	if k := c.BackfillCheck; k != nil {
		fmt.Fprintf(w, "  index of the background build: %s\n", k.String())
	}
}

// String describes a check in one line.
func (k IndexCheck) String() string {
	return fmt.Sprintf("complete, heights %d..%d (%d blocks, %d with tweaks, %d tweaks), headers and block hashes equal btcd's chain; %d sampled blocks %v: %d transactions, %d tweaks, all equal to ComputeTweakMsg over btcd's data",
		k.Start, k.UpTo, k.Blocks, k.BlocksWithTweaks, k.Tweaks, len(k.Sampled), k.Sampled, k.SampledTxs, k.SampledTweaks)
}

func catchUp(r daemon.Result) time.Duration { return r.CatchUp }
func cpu(r daemon.Result) time.Duration     { return r.CPU }

// medianDur is the median of f over rs (the upper one of an even count),
// 0 for none.
func medianDur(rs []daemon.Result, f func(daemon.Result) time.Duration) time.Duration {
	if len(rs) == 0 {
		return 0
	}
	v := make([]time.Duration, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// runList renders the catch-ups of rs in run order.
func runList(rs []daemon.Result) string {
	out := ""
	for i, r := range rs {
		if i > 0 {
			out += ", "
		}
		out += dur(r.CatchUp)
	}
	return out
}

// dur rounds a duration for the table, as cfbench's tables do.
func dur(d time.Duration) string {
	if d >= 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// mb converts bytes to megabytes (10^6).
func mb(b int64) float64 { return float64(b) / 1e6 }

// verdict renders a goal check.
func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
