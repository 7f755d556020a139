package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Goals of the sync benchmark (issue 2).
const (
	// goalSyncRatio: cfindexd at least as fast as btcd's own catch-up.
	goalSyncRatio = 1.0
	// goalCPUShare: cfindexd's CPU under 10 % of its catch-up wall time,
	// so the node, not cfindexd, is the bottleneck.
	goalCPUShare = 0.10
	// goalPeakRSS: peak RSS under 150 MB.
	goalPeakRSS = 150e6
)

// syncReport is the result of the sync benchmark.
type syncReport struct {
	Chain       chainInfo `json:"chain"`
	Workers     int       `json:"workers"`
	BatchBlocks int       `json:"batch_blocks"`
	Out         string    `json:"out_dir"`
	// LoadBefore and LoadAfter are the machine's load averages around the
	// measurements.
	LoadBefore string            `json:"load_avg_before"`
	LoadAfter  string            `json:"load_avg_after"`
	Daemon     []daemonResult    `json:"cfindexd_runs"`
	InProcess  *profileResult    `json:"in_process"`
	Btcd       []btcdIndexResult `json:"btcd_runs"`
	Floor      []floorResult     `json:"node_floor_runs"`
	Summary    syncSummary       `json:"summary"`
}

// syncSummary holds the medians over the runs and the goal checks.
type syncSummary struct {
	// Blocks is the number of blocks indexed (genesis through the tip).
	Blocks int `json:"blocks"`
	// Elements is the total of filter elements over the chain.
	Elements int64 `json:"elements"`

	CFIndexdCatchUp    time.Duration `json:"cfindexd_catch_up_ns"`
	CFIndexdBlocksPerS float64       `json:"cfindexd_blocks_per_s"`
	CFIndexdElemsPerS  float64       `json:"cfindexd_elements_per_s"`
	CFIndexdCPUShare   float64       `json:"cfindexd_cpu_share"`
	CFIndexdPeakRSS    int64         `json:"cfindexd_peak_rss_bytes"` // the largest over the runs
	NodeCPUShare       float64       `json:"node_cpu_share_during_cfindexd"`
	BtcdCatchUp        time.Duration `json:"btcd_catch_up_ns"`
	BtcdFromStart      time.Duration `json:"btcd_from_start_ns"`
	BtcdBlocksPerS     float64       `json:"btcd_blocks_per_s"`
	BtcdPeakRSS        int64         `json:"btcd_peak_rss_bytes"` // the largest over the runs
	// Ratio is btcd's catch-up (log: catching up → caught up) over
	// cfindexd's (process start → tip): above 1 means cfindexd is faster.
	Ratio float64 `json:"ratio"`
	// RatioFromStart compares both from process start.
	RatioFromStart float64 `json:"ratio_from_start"`
	// Floor is the median node serving floor (floorResult.Wall);
	// FloorCPUShare the fetching process's CPU over it; CatchUpOverFloor
	// cfindexd's catch-up over it: near 1, the node bounds the catch-up.
	Floor            time.Duration `json:"node_floor_ns"`
	FloorCPUShare    float64       `json:"node_floor_cpu_share"`
	CatchUpOverFloor float64       `json:"catch_up_over_floor"`

	MeetsSpeed bool `json:"meets_speed_goal"`
	MeetsCPU   bool `json:"meets_cpu_goal"`
	MeetsRSS   bool `json:"meets_rss_goal"`
}

// summarize fills Summary from the runs.
func (r *syncReport) summarize() {
	s := &r.Summary
	s.Blocks = int(r.Chain.Height) + 1
	if r.InProcess != nil {
		s.Elements = r.InProcess.Elements
	}
	s.CFIndexdCatchUp = medianOf(r.Daemon, func(d daemonResult) time.Duration { return d.CatchUp })
	s.CFIndexdCPUShare = medianFloat(r.Daemon, daemonResult.CPUShare)
	s.NodeCPUShare = medianFloat(r.Daemon, func(d daemonResult) float64 { return d.NodeCPU.Seconds() / d.CatchUp.Seconds() })
	for _, d := range r.Daemon {
		s.CFIndexdPeakRSS = max(s.CFIndexdPeakRSS, d.PeakRSS)
	}
	s.BtcdCatchUp = medianOf(r.Btcd, func(b btcdIndexResult) time.Duration { return b.CatchUp })
	for _, b := range r.Btcd {
		s.BtcdPeakRSS = max(s.BtcdPeakRSS, b.PeakRSS)
	}
	s.BtcdFromStart = medianOf(r.Btcd, func(b btcdIndexResult) time.Duration { return b.FromStart })
	if s.CFIndexdCatchUp > 0 {
		secs := s.CFIndexdCatchUp.Seconds()
		s.CFIndexdBlocksPerS = float64(s.Blocks) / secs
		s.CFIndexdElemsPerS = float64(s.Elements) / secs
		s.Ratio = s.BtcdCatchUp.Seconds() / secs
		s.RatioFromStart = s.BtcdFromStart.Seconds() / secs
	}
	if s.BtcdCatchUp > 0 {
		s.BtcdBlocksPerS = float64(s.Blocks) / s.BtcdCatchUp.Seconds()
	}
	s.Floor = medianOf(r.Floor, func(f floorResult) time.Duration { return f.Wall })
	s.FloorCPUShare = medianFloat(r.Floor, func(f floorResult) float64 { return f.CPU.Seconds() / f.Wall.Seconds() })
	if s.Floor > 0 {
		s.CatchUpOverFloor = s.CFIndexdCatchUp.Seconds() / s.Floor.Seconds()
	}
	s.MeetsSpeed = s.Ratio >= goalSyncRatio
	s.MeetsCPU = s.CFIndexdCPUShare < goalCPUShare
	s.MeetsRSS = s.CFIndexdPeakRSS > 0 && s.CFIndexdPeakRSS < goalPeakRSS
}

// writeTable prints the report for people.
func (r *syncReport) writeTable(w io.Writer) error {
	s := r.Summary
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "chain\tsimnet, %d blocks (%d tx-rich), %d filter elements, built in %s\n",
		s.Blocks, r.Chain.RichBlocks, s.Elements, r.Chain.BuildTime.Round(time.Second))
	fmt.Fprintf(tw, "runs\t%d cfindexd, %d btcd (medians below); cfindexd --workers=%d --batchblocks=%d\n",
		len(r.Daemon), len(r.Btcd), r.Workers, r.BatchBlocks)
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "\tcatch-up\tblocks/s\telements/s\tCPU % of wall\tpeak RSS")
	fmt.Fprintf(tw, "cfindexd (process start → tip)\t%s\t%.0f\t%.0f\t%.1f %%\t%.1f MB\n",
		dur(s.CFIndexdCatchUp), s.CFIndexdBlocksPerS, s.CFIndexdElemsPerS, 100*s.CFIndexdCPUShare, mb(s.CFIndexdPeakRSS))
	if len(r.Btcd) > 0 {
		fmt.Fprintf(tw, "btcd cfindex (log: catching up → caught up)\t%s\t%.0f\t%.0f\t\t%.1f MB\n",
			dur(s.BtcdCatchUp), s.BtcdBlocksPerS, float64(s.Elements)/s.BtcdCatchUp.Seconds(), mb(s.BtcdPeakRSS))
		fmt.Fprintf(tw, "btcd cfindex (process start → caught up)\t%s\t\t\t\t\n", dur(s.BtcdFromStart))
	}
	if p := r.InProcess; p != nil {
		fmt.Fprintf(tw, "cfindexd in process, profiled (follower start → tip)\t%s\t%.0f\t%.0f\t%.1f %%\t\n",
			dur(p.Wall), float64(p.Blocks)/p.Wall.Seconds(), float64(p.Elements)/p.Wall.Seconds(), 100*p.CPU.Seconds()/p.Wall.Seconds())
	}
	if s.Floor > 0 {
		fmt.Fprintf(tw, "node floor: same fetches, nothing built or stored\t%s\t%.0f\t\t%.1f %%\t\n",
			dur(s.Floor), float64(s.Blocks)/s.Floor.Seconds(), 100*s.FloorCPUShare)
	}
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "cfindexd runs (catch-up)\t%s\n", runList(r.Daemon, func(d daemonResult) time.Duration { return d.CatchUp }))
	fmt.Fprintf(tw, "btcd runs (catch-up)\t%s\n", runList(r.Btcd, func(b btcdIndexResult) time.Duration { return b.CatchUp }))
	fmt.Fprintf(tw, "ratio btcd/cfindexd\t%.2f (>1: cfindexd faster; from process start on both sides: %.2f)\n", s.Ratio, s.RatioFromStart)
	fmt.Fprintf(tw, "btcd's CPU during cfindexd's catch-up\t%.0f %% of wall\n", 100*s.NodeCPUShare)
	if s.Floor > 0 {
		fmt.Fprintf(tw, "catch-up / node floor\t%.2f (near 1: the node, not cfindexd, bounds the catch-up)\n", s.CatchUpOverFloor)
	}
	if p := r.InProcess; p != nil && p.Connections >= 0 {
		fmt.Fprintf(tw, "RPC connections, in-process run\t%d (%.1f per block; btcd closes each after one HTTP request)\n",
			p.Connections, float64(p.Connections)/float64(max(1, p.Blocks)))
	}
	fmt.Fprintf(tw, "goal: at least as fast as btcd\t%s\n", verdict(s.MeetsSpeed))
	fmt.Fprintf(tw, "goal: cfindexd CPU < 10 %% of wall\t%s\n", verdict(s.MeetsCPU))
	fmt.Fprintf(tw, "goal: peak RSS < 150 MB\t%s\n", verdict(s.MeetsRSS))
	if r.InProcess != nil && r.InProcess.Verified {
		fmt.Fprintf(tw, "filters\tall %d equal btcd's (getcfilter, getcfilterheader)\n", r.InProcess.Blocks)
	}
	fmt.Fprintf(tw, "machine load average\t%s before, %s after (other work on the machine shifts every number)\n", r.LoadBefore, r.LoadAfter)
	fmt.Fprintf(tw, "output\t%s\n", r.Out)
	if err := tw.Flush(); err != nil {
		return err
	}
	if p := r.InProcess; p != nil && len(p.Top) > 0 {
		fmt.Fprintf(w, "\nCPU profile of the in-process catch-up (%s), top by flat time:\n", p.Profile)
		for _, l := range p.Top {
			fmt.Fprintln(w, "  "+l)
		}
		fmt.Fprintln(w, "\nsame, cumulative, cfindexd's packages only:")
		for _, l := range p.TopCum {
			fmt.Fprintln(w, "  "+l)
		}
	}
	return nil
}

// runList renders f of every run, in run order.
func runList[T any](runs []T, f func(T) time.Duration) string {
	var b strings.Builder
	for i, r := range runs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(dur(f(r)))
	}
	return b.String()
}
