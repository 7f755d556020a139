package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// Goals of the serve benchmark (issue 4), under the same saturating load.
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
	Chain           chainInfo    `json:"chain"`
	Out             string       `json:"out_dir"`
	LoadBefore      string       `json:"load_avg_before"`
	LoadAfter       string       `json:"load_avg_after"`
	CFIndexd        loadResult   `json:"cfindexd"`
	Btcd            loadResult   `json:"btcd"`
	CFIndexdPeakRSS int64        `json:"cfindexd_peak_rss_bytes"`
	BtcdPeakRSS     int64        `json:"btcd_peak_rss_bytes"`
	Summary         serveSummary `json:"summary"`
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
}

// summarize fills Summary.
func (r *serveReport) summarize() {
	s := &r.Summary
	c, b := r.CFIndexd, r.Btcd
	s.ThroughputRatio = ratio(c.FiltersPerS, b.FiltersPerS)
	s.FilterP99Ratio = ratio(c.FilterLatency.P99.Seconds(), b.FilterLatency.P99.Seconds())
	s.HeaderP99Ratio = ratio(c.HeaderLatency.P99.Seconds(), b.HeaderLatency.P99.Seconds())
	s.MeetsThroughput = s.ThroughputRatio >= goalServeThroughput
	s.MeetsLatency = latencyGoal(s.FilterP99Ratio, c.FilterReqs, b.FilterReqs) &&
		latencyGoal(s.HeaderP99Ratio, c.HeaderReqs, b.HeaderReqs)
	s.MeetsRSS = r.CFIndexdPeakRSS > 0 && r.CFIndexdPeakRSS < goalServeRSS
	s.Clean = c.Errors == 0 && b.Errors == 0
}

// latencyGoal checks a p99 ratio; a request kind neither side served (by
// -filtershare) does not count against the goal.
func latencyGoal(r float64, ours, theirs int) bool {
	if ours == 0 && theirs == 0 {
		return true
	}
	return ours > 0 && r <= goalServeP99
}

// ratio is a/b, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// writeTable prints the report for people.
func (r *serveReport) writeTable(w io.Writer) error {
	s := r.Summary
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "chain\tsimnet, %d blocks (%d tx-rich)\n", r.Chain.Height+1, r.Chain.RichBlocks)
	fmt.Fprintf(tw, "load\t%d peers, one request each in flight, %s measured after warm-up\n", r.CFIndexd.Peers, r.CFIndexd.Window)
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "\tfilters/s\tMB/s\tgetcfilters p50\tp99\tgetcfheaders p50\tp99\trequests\terrors\tserver CPU\tpeak RSS")
	row := func(name string, l loadResult, rss int64) {
		fmt.Fprintf(tw, "%s\t%.0f\t%.1f\t%s\t%s\t%s\t%s\t%d\t%d\t%.0f %%\t%.1f MB\n", name,
			l.FiltersPerS, l.MBPerS, durOrDash(l.FilterLatency.P50), durOrDash(l.FilterLatency.P99),
			durOrDash(l.HeaderLatency.P50), durOrDash(l.HeaderLatency.P99), l.FilterReqs+l.HeaderReqs, l.Errors,
			100*l.ServerCPUShare, mb(rss))
	}
	row("cfindexd", r.CFIndexd, r.CFIndexdPeakRSS)
	row("btcd", r.Btcd, r.BtcdPeakRSS)
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "ratio cfindexd/btcd\tfilters/s %.2f, getcfilters p99 %.2f, getcfheaders p99 %.2f\n",
		s.ThroughputRatio, s.FilterP99Ratio, s.HeaderP99Ratio)
	fmt.Fprintf(tw, "goal: ≥ 2× btcd's filters/s\t%s\n", verdict(s.MeetsThroughput))
	fmt.Fprintf(tw, "goal: ≤ ½ btcd's p99\t%s\n", verdict(s.MeetsLatency))
	fmt.Fprintf(tw, "goal: cfindexd peak RSS < 150 MB\t%s (peak over its whole life, catch-up included)\n", verdict(s.MeetsRSS))
	for _, e := range []struct {
		name string
		l    loadResult
	}{{"cfindexd", r.CFIndexd}, {"btcd", r.Btcd}} {
		if e.l.Errors > 0 {
			fmt.Fprintf(tw, "%s errors\t%d peers stopped; first: %s\n", e.name, e.l.Errors, e.l.FirstError)
		}
	}
	fmt.Fprintf(tw, "machine load average\t%s before, %s after (other work on the machine shifts every number)\n", r.LoadBefore, r.LoadAfter)
	fmt.Fprintf(tw, "output\t%s\n", r.Out)
	return tw.Flush()
}

// durOrDash renders a latency, "-" when none was measured.
func durOrDash(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return dur(d)
}
