package main

import (
	"fmt"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/chains"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/load"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// Goals of the serve benchmark, under the same saturating load.
const (
	// goalServeThroughput: at least twice btcd's filters/s.
	goalServeThroughput = 2.0
	// goalServeP99: at most half btcd's p99 latency.
	goalServeP99 = 0.5
	// goalServeRSS: cfindexd's peak RSS under 150 MB.
	goalServeRSS = 150e6
)

// serveReport is the result of the serve benchmark.
type serveReport struct {
	Chain      chains.Info `json:"chain"`
	Out        string      `json:"out_dir"`
	LoadBefore string      `json:"load_avg_before"`
	LoadAfter  string      `json:"load_avg_after"`
	// CFIndexd is the median of CFIndexdRuns (by filters/s), one per
	// round; Baseline likewise for -baseline (empty without it).
	CFIndexd        load.Result   `json:"cfindexd"`
	CFIndexdRuns    []load.Result `json:"cfindexd_runs"`
	Baseline        load.Result   `json:"baseline"`
	BaselineRuns    []load.Result `json:"baseline_runs,omitempty"`
	BaselineBinary  string        `json:"baseline_binary,omitempty"`
	Btcd            load.Result   `json:"btcd"`
	CFIndexdPeakRSS int64         `json:"cfindexd_peak_rss_bytes"`
	BaselinePeakRSS int64         `json:"baseline_peak_rss_bytes,omitempty"`
	BtcdPeakRSS     int64         `json:"btcd_peak_rss_bytes"`
	Summary         serveSummary  `json:"summary"`
	// Transports compares cfindexd over v1 (CFIndexdRuns) and v2 with
	// -transport both; nil otherwise.
	Transports *load.TransportComparison `json:"transports,omitempty"`
}

// serveSummary holds the ratios and goal checks; ratios are cfindexd over
// btcd.
type serveSummary struct {
	ThroughputRatio float64 `json:"filters_per_s_ratio"`
	FilterP99Ratio  float64 `json:"getcfilters_p99_ratio"`
	HeaderP99Ratio  float64 `json:"getcfheaders_p99_ratio"`
	MeetsThroughput bool    `json:"meets_throughput_goal"`
	MeetsLatency    bool    `json:"meets_latency_goal"`
	MeetsRSS        bool    `json:"meets_rss_goal"`
	Clean           bool    `json:"no_errors"`
	// BaselineRatio is the median over rounds of cfindexd's filters/s
	// over the baseline's in the same round; BaselineP99Ratio that of the
	// getcfilters p99s; BaselineCPURatio the baseline's server CPU per
	// filter over cfindexd's (medians). Zero without -baseline.
	BaselineRatio    float64 `json:"baseline_filters_per_s_ratio,omitempty"`
	BaselineP99Ratio float64 `json:"baseline_getcfilters_p99_ratio,omitempty"`
	BaselineCPURatio float64 `json:"baseline_server_cpu_per_filter_ratio,omitempty"`
}

// summarize fills CFIndexd, Baseline and Summary.
func (r *serveReport) summarize() {
	r.CFIndexd, r.Baseline = load.MedianResult(r.CFIndexdRuns), load.MedianResult(r.BaselineRuns)
	s := &r.Summary
	if n := min(len(r.CFIndexdRuns), len(r.BaselineRuns)); n > 0 {
		var tput, p99, cpu []float64
		for i := range n {
			c, b := r.CFIndexdRuns[i], r.BaselineRuns[i]
			tput = append(tput, load.Ratio(c.FiltersPerS, b.FiltersPerS))
			p99 = append(p99, load.Ratio(c.FilterLatency.P99.Seconds(), b.FilterLatency.P99.Seconds()))
			cpu = append(cpu, load.Ratio(b.ServerNsPerFilter, c.ServerNsPerFilter))
		}
		s.BaselineRatio, s.BaselineP99Ratio, s.BaselineCPURatio = load.Median(tput), load.Median(p99), load.Median(cpu)
	}
	c, b := r.CFIndexd, r.Btcd
	s.ThroughputRatio = load.Ratio(c.FiltersPerS, b.FiltersPerS)
	s.FilterP99Ratio = load.Ratio(c.FilterLatency.P99.Seconds(), b.FilterLatency.P99.Seconds())
	s.HeaderP99Ratio = load.Ratio(c.HeaderLatency.P99.Seconds(), b.HeaderLatency.P99.Seconds())
	s.MeetsThroughput = s.ThroughputRatio >= goalServeThroughput
	s.MeetsLatency = latencyGoal(s.FilterP99Ratio, c.FilterReqs, b.FilterReqs) &&
		latencyGoal(s.HeaderP99Ratio, c.HeaderReqs, b.HeaderReqs)
	s.MeetsRSS = r.CFIndexdPeakRSS > 0 && r.CFIndexdPeakRSS < goalServeRSS
	s.Clean = c.Errors == 0 && b.Errors == 0
	for _, l := range append(slices.Clone(r.CFIndexdRuns), r.BaselineRuns...) {
		s.Clean = s.Clean && l.Errors == 0
	}
}

// latencyGoal checks a p99 ratio; a request kind neither side served (by
// -filtershare) does not count against the goal.
func latencyGoal(r float64, ours, theirs int) bool {
	if ours == 0 && theirs == 0 {
		return true
	}
	return ours > 0 && r <= goalServeP99
}

// writeTable prints the report for people.
func (r *serveReport) writeTable(w io.Writer) error {
	s := r.Summary
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "chain\tsimnet, %d blocks (%d tx-rich)\n", r.Chain.Height+1, r.Chain.RichBlocks)
	fmt.Fprintf(tw, "load\t%d peers, one request each in flight, %s measured after warm-up\n", r.CFIndexd.Peers, r.CFIndexd.Window)
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "\tfilters/s\tMB/s\tgetcfilters p50\tp99\tgetcfheaders p50\tp99\trequests\terrors\tserver CPU\tserver CPU/filter\tclient CPU/filter\tpeak RSS")
	row := func(name string, l load.Result, rss int64) {
		fmt.Fprintf(tw, "%s\t%.0f\t%.1f\t%s\t%s\t%s\t%s\t%d\t%d\t%.0f %%\t%.0f ns\t%.0f ns\t%s\n", name,
			l.FiltersPerS, l.MBPerS, durOrDash(l.FilterLatency.P50), durOrDash(l.FilterLatency.P99),
			durOrDash(l.HeaderLatency.P50), durOrDash(l.HeaderLatency.P99), l.FilterReqs+l.HeaderReqs, l.Errors,
			100*l.ServerCPUShare, l.ServerNsPerFilter, l.ClientNsPerFilter, mbOrDash(rss))
	}
	rounds := len(r.CFIndexdRuns)
	if rounds > 1 {
		for i, l := range r.CFIndexdRuns {
			row(fmt.Sprintf("cfindexd, round %d", i+1), l, 0)
		}
		for i, l := range r.BaselineRuns {
			row(fmt.Sprintf("baseline, round %d", i+1), l, 0)
		}
	}
	median := ""
	if rounds > 1 {
		median = fmt.Sprintf(" (median of %d)", rounds)
	}
	row("cfindexd"+median, r.CFIndexd, r.CFIndexdPeakRSS)
	if len(r.BaselineRuns) > 0 {
		row("baseline"+median, r.Baseline, r.BaselinePeakRSS)
	}
	row("btcd", r.Btcd, r.BtcdPeakRSS)
	fmt.Fprintln(tw)
	if len(r.BaselineRuns) > 0 {
		fmt.Fprintf(tw, "ratio cfindexd/baseline\tfilters/s %.2f, getcfilters p99 %.2f, server CPU per filter ÷ %.2f (medians of per-round ratios; baseline %s)\n",
			s.BaselineRatio, s.BaselineP99Ratio, s.BaselineCPURatio, r.BaselineBinary)
	}
	fmt.Fprintf(tw, "ratio cfindexd/btcd\tfilters/s %.2f, getcfilters p99 %.2f, getcfheaders p99 %.2f\n",
		s.ThroughputRatio, s.FilterP99Ratio, s.HeaderP99Ratio)
	fmt.Fprintf(tw, "goal: ≥ 2× btcd's filters/s\t%s\n", verdict(s.MeetsThroughput))
	fmt.Fprintf(tw, "goal: ≤ ½ btcd's p99\t%s\n", verdict(s.MeetsLatency))
	fmt.Fprintf(tw, "goal: cfindexd peak RSS < 150 MB\t%s (peak over its whole life, catch-up included)\n", verdict(s.MeetsRSS))
	type named struct {
		name string
		l    load.Result
	}
	all := []named{{"btcd", r.Btcd}}
	for i, l := range r.CFIndexdRuns {
		all = append(all, named{fmt.Sprintf("cfindexd (round %d)", i+1), l})
	}
	for i, l := range r.BaselineRuns {
		all = append(all, named{fmt.Sprintf("baseline (round %d)", i+1), l})
	}
	for _, e := range all {
		if e.l.Errors > 0 {
			fmt.Fprintf(tw, "%s errors\t%d peers stopped; first: %s\n", e.name, e.l.Errors, e.l.FirstError)
		}
	}
	if r.Transports != nil {
		fmt.Fprintln(tw)
		r.Transports.WriteTable(tw)
	}
	fmt.Fprintf(tw, "machine load average\t%s before, %s after (other work on the machine shifts every number)\n", r.LoadBefore, r.LoadAfter)
	fmt.Fprintf(tw, "output\t%s\n", r.Out)
	return tw.Flush()
}

// mbOrDash renders a size in MB, "-" when none was measured.
func mbOrDash(n int64) string {
	if n <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f MB", mb(n))
}

// durOrDash renders a latency, "-" when none was measured.
func durOrDash(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return dur(d)
}
