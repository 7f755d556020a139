package main

import (
	"fmt"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/chains"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/daemon"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/procstat"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/spbench"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Goals of the sync benchmark.
const (
	// goalSyncRatio: cfindexd's catch-up at least twice as fast as btcd
	// rebuilding its own cfindex.
	goalSyncRatio = 2.0
	// goalPeakRSS: peak RSS at most 150 MB in every source.
	goalPeakRSS = 150e6
	// goalBlocksDirOverP2P: the blocks-dir source at least five times the
	// blocks/s of txindex with blocks over btcd's P2P port.
	goalBlocksDirOverP2P = 5.0
)

// syncReport is the result of the sync benchmark.
type syncReport struct {
	Chain chains.Info `json:"chain"`
	// BlocksDir is the Core-format directory the blocks-dir source read,
	// when it was measured.
	BlocksDir *chains.BlocksDirInfo `json:"blocks_dir,omitempty"`
	// Runs is how many times each catch-up was measured.
	Runs        int    `json:"runs"`
	Workers     int    `json:"workers"`
	BatchBlocks int    `json:"batch_blocks"`
	Out         string `json:"out_dir"`
	// LoadBefore and LoadAfter are the machine's load averages around the
	// measurements.
	LoadBefore string            `json:"load_avg_before"`
	LoadAfter  string            `json:"load_avg_after"`
	Sources    []sourceReport    `json:"sources"`
	InProcess  *profileResult    `json:"in_process,omitempty"`
	Fixture    *fixtureResult    `json:"core_fixture,omitempty"`
	Btcd       []btcdIndexResult `json:"btcd_runs"`
	// SilentPay holds each source's runs with the silent-payment index
	// (-sp-compare).
	SilentPay []*spbench.Comparison `json:"silent_payments,omitempty"`
	Summary   syncSummary           `json:"summary"`
}

// sourceReport is one source's runs and their summary.
type sourceReport struct {
	Name    string          `json:"name"`
	Title   string          `json:"title"`
	Runs    []daemon.Result `json:"cfindexd_runs"`
	Floor   []floorResult   `json:"node_floor_runs"`
	Summary sourceSummary   `json:"summary"`
}

// sourceSummary holds a source's medians over its runs, its ratios and
// goal checks.
type sourceSummary struct {
	// CatchUp is cfindexd's median catch-up (process start → tip).
	CatchUp      time.Duration `json:"catch_up_ns"`
	BlocksPerS   float64       `json:"blocks_per_s"`
	MBPerS       float64       `json:"block_mb_per_s"`
	ElementsPerS float64       `json:"elements_per_s"`
	// CPUPerBlock and NodeCPUPerBlock are cfindexd's and btcd's CPU
	// seconds per block during the catch-up (medians).
	CPUPerBlock     float64 `json:"cpu_s_per_block"`
	NodeCPUPerBlock float64 `json:"node_cpu_s_per_block"`
	// PeakRSS is the largest over the runs (rusage); PeakAnon and
	// PeakFile the largest anonymous and file-backed parts sampled;
	// MaxGCLive the largest heap the GC left live.
	PeakRSS   int64 `json:"peak_rss_bytes"`
	PeakAnon  int64 `json:"peak_rss_anon_bytes"`
	PeakFile  int64 `json:"peak_rss_file_bytes"`
	MaxGCLive int64 `json:"max_gc_live_bytes"`
	// Ratio is btcd's rebuild (log: catching up → caught up) over the
	// catch-up: above 1 means cfindexd is faster. RatioFromStart compares
	// both from process start.
	Ratio          float64 `json:"ratio"`
	RatioFromStart float64 `json:"ratio_from_start"`
	// Floor is the median node floor of the source; CatchUpOverFloor the
	// catch-up over it (near 1: the node bounds the catch-up).
	Floor            time.Duration `json:"node_floor_ns"`
	FloorBlocksPerS  float64       `json:"node_floor_blocks_per_s"`
	FloorCPUPerBlock float64       `json:"node_floor_cpu_s_per_block"`
	FloorNodeCPU     float64       `json:"node_floor_node_cpu_s_per_block"`
	CatchUpOverFloor float64       `json:"catch_up_over_floor"`
	// PrevoutCachePct is the share of spent scripts the source's script
	// cache resolved (first floor run), -1 for a source without one.
	PrevoutCachePct float64 `json:"prevout_cache_pct"`
	// Verified is true when every run's store equals btcd's index.
	Verified   bool `json:"verified"`
	MeetsSpeed bool `json:"meets_speed_goal"`
	MeetsRSS   bool `json:"meets_rss_goal"`
}

// syncSummary holds the chain's totals and btcd's medians.
type syncSummary struct {
	// Blocks is the number of blocks indexed (genesis through the tip);
	// Bytes their serialized size; Elements the filter elements (as
	// cfindexd counts them, before de-duplication).
	Blocks   int   `json:"blocks"`
	Bytes    int64 `json:"block_bytes"`
	Elements int64 `json:"elements"`

	BtcdCatchUp     time.Duration `json:"btcd_catch_up_ns"`
	BtcdFromStart   time.Duration `json:"btcd_from_start_ns"`
	BtcdBlocksPerS  float64       `json:"btcd_blocks_per_s"`
	BtcdCPUPerBlock float64       `json:"btcd_cpu_s_per_block"`
	BtcdPeakRSS     int64         `json:"btcd_peak_rss_bytes"` // the largest over the runs

	// Best is the source with the shortest catch-up and BestRatio its
	// ratio to btcd's rebuild (the 2× goal is cfindexd's, with the best
	// source the node allows).
	Best           string  `json:"best_source"`
	BestRatio      float64 `json:"best_ratio"`
	MeetsBestSpeed bool    `json:"meets_best_speed_goal"`
	// BlocksDirOverP2P is the blocks-dir source's blocks/s over
	// txindex-p2p's, 0 unless both were measured (goal: 5).
	BlocksDirOverP2P   float64 `json:"blocksdir_over_txindex_p2p"`
	MeetsBlocksDirGoal bool    `json:"meets_blocksdir_goal"`
}

// summarize fills the summaries from the runs.
func (r *syncReport) summarize() {
	s := &r.Summary
	s.Blocks = int(r.Chain.Height) + 1
	s.Bytes = chainBytes(r.Chain, r.InProcess)
	if r.InProcess != nil {
		s.Elements = r.InProcess.Elements
	}
	s.BtcdCatchUp = medianOf(r.Btcd, func(b btcdIndexResult) time.Duration { return b.CatchUp })
	s.BtcdFromStart = medianOf(r.Btcd, func(b btcdIndexResult) time.Duration { return b.FromStart })
	for _, b := range r.Btcd {
		s.BtcdPeakRSS = max(s.BtcdPeakRSS, b.PeakRSS)
	}
	blocks := float64(s.Blocks)
	if s.BtcdCatchUp > 0 {
		s.BtcdBlocksPerS = blocks / s.BtcdCatchUp.Seconds()
	}
	s.BtcdCPUPerBlock = medianFloat(r.Btcd, func(b btcdIndexResult) float64 { return b.CPU.Seconds() }) / blocks
	byName := map[string]sourceSummary{}
	for i := range r.Sources {
		r.Sources[i].summarize(s)
		m := r.Sources[i].Summary
		byName[r.Sources[i].Name] = m
		if m.CatchUp > 0 && (s.Best == "" || m.Ratio > s.BestRatio) {
			s.Best, s.BestRatio = r.Sources[i].Name, m.Ratio
		}
	}
	s.MeetsBestSpeed = s.BestRatio >= goalSyncRatio
	for _, c := range r.SilentPay {
		c.Summarize(s.Blocks, goalPeakRSS)
	}
	if bd, p2p := byName["blocksdir"], byName["txindex-p2p"]; bd.BlocksPerS > 0 && p2p.BlocksPerS > 0 {
		s.BlocksDirOverP2P = bd.BlocksPerS / p2p.BlocksPerS
		s.MeetsBlocksDirGoal = s.BlocksDirOverP2P >= goalBlocksDirOverP2P
	}
}

// summarize fills a source's summary; chain holds the chain's totals
// and btcd's medians.
func (sr *sourceReport) summarize(chain *syncSummary) {
	s := &sr.Summary
	blocks := float64(chain.Blocks)
	s.CatchUp = medianOf(sr.Runs, func(d daemon.Result) time.Duration { return d.CatchUp })
	s.CPUPerBlock = medianFloat(sr.Runs, func(d daemon.Result) float64 { return d.CPU.Seconds() }) / blocks
	s.NodeCPUPerBlock = medianFloat(sr.Runs, func(d daemon.Result) float64 { return d.NodeCPU.Seconds() }) / blocks
	s.Verified = len(sr.Runs) > 0
	for _, d := range sr.Runs {
		s.PeakRSS = max(s.PeakRSS, d.PeakRSS)
		s.PeakAnon = max(s.PeakAnon, d.PeakAnon)
		s.PeakFile = max(s.PeakFile, d.PeakFile)
		s.MaxGCLive = max(s.MaxGCLive, d.GC.MaxLive)
		s.Verified = s.Verified && d.Verified
	}
	if s.CatchUp > 0 {
		secs := s.CatchUp.Seconds()
		s.BlocksPerS = blocks / secs
		s.MBPerS = mb(chain.Bytes) / secs
		s.ElementsPerS = float64(chain.Elements) / secs
		s.Ratio = chain.BtcdCatchUp.Seconds() / secs
		s.RatioFromStart = chain.BtcdFromStart.Seconds() / secs
	}
	s.Floor = medianOf(sr.Floor, func(f floorResult) time.Duration { return f.Wall })
	s.FloorCPUPerBlock = medianFloat(sr.Floor, func(f floorResult) float64 { return f.CPU.Seconds() }) / blocks
	s.FloorNodeCPU = medianFloat(sr.Floor, func(f floorResult) float64 { return f.NodeCPU.Seconds() }) / blocks
	if s.Floor > 0 {
		s.FloorBlocksPerS = blocks / s.Floor.Seconds()
		s.CatchUpOverFloor = s.CatchUp.Seconds() / s.Floor.Seconds()
	}
	s.PrevoutCachePct = -1
	if len(sr.Floor) > 0 {
		if f := sr.Floor[0]; f.FromCache+f.FromNode > 0 {
			s.PrevoutCachePct = 100 * float64(f.FromCache) / float64(f.FromCache+f.FromNode)
		}
	}
	s.MeetsSpeed = s.Ratio >= goalSyncRatio
	s.MeetsRSS = s.PeakRSS > 0 && s.PeakRSS <= goalPeakRSS
}

// writeTable prints the report for people.
func (r *syncReport) writeTable(w io.Writer) error {
	s := r.Summary
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "chain\t%s\n", r.chainLine())
	if d := r.BlocksDir; d != nil {
		fmt.Fprintf(tw, "blocks dir\t%s: the chain in Core's format, %d blk/rev pairs (%.1f MB blk, %.1f MB rev, obfuscated), written in %s\n",
			d.Dir, d.Files, mb(d.BlkBytes), mb(d.RevBytes), dur(d.Took))
	}
	fmt.Fprintf(tw, "runs\t%d per source, medians below; cfindexd --workers=%d --batchblocks=%d\n",
		r.Runs, r.Workers, r.BatchBlocks)
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "\tcatch-up\tblocks/s\tMB/s\telements/s\tCPU ms/block (cfindexd / btcd)\tpeak RSS (anon / file)\tbtcd rebuild ÷ catch-up\tprevouts from cache")
	for _, sr := range r.Sources {
		m := sr.Summary
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.1f\t%.0f\t%.2f / %.2f\t%.1f MB (%.1f / %.1f)\t%.2f\t%s\n",
			sr.Title, dur(m.CatchUp), m.BlocksPerS, m.MBPerS, m.ElementsPerS, 1000*m.CPUPerBlock, 1000*m.NodeCPUPerBlock,
			mb(m.PeakRSS), mb(m.PeakAnon), mb(m.PeakFile), m.Ratio, pct(m.PrevoutCachePct))
	}
	for _, sr := range r.Sources {
		m := sr.Summary
		if m.Floor > 0 {
			fmt.Fprintf(tw, "node floor: %s, nothing built or stored\t%s\t%.0f\t%.1f\t\t%.2f / %.2f\t\t\t\n",
				sr.Name, dur(m.Floor), m.FloorBlocksPerS, mb(s.Bytes)/m.Floor.Seconds(), 1000*m.FloorCPUPerBlock, 1000*m.FloorNodeCPU)
		}
	}
	if len(r.Btcd) > 0 {
		fmt.Fprintf(tw, "btcd rebuilding its cfindex (log: catching up → caught up)\t%s\t%.0f\t%.1f\t%.0f\t– / %.2f\t%.1f MB\t1\t\n",
			dur(s.BtcdCatchUp), s.BtcdBlocksPerS, mb(s.Bytes)/s.BtcdCatchUp.Seconds(), float64(s.Elements)/s.BtcdCatchUp.Seconds(),
			1000*s.BtcdCPUPerBlock, mb(s.BtcdPeakRSS))
		fmt.Fprintf(tw, "btcd rebuilding its cfindex (process start → caught up)\t%s\t\t\t\t\t\t\t\n", dur(s.BtcdFromStart))
	}
	if p := r.InProcess; p != nil {
		fmt.Fprintf(tw, "%s in process, profiled (follower start → tip)\t%s\t%.0f\t%.1f\t%.0f\t%.2f / \t\t\t%s\n",
			p.Source, dur(p.Wall), float64(p.Blocks)/p.Wall.Seconds(), mb(p.BlockBytes)/p.Wall.Seconds(),
			float64(p.Elements)/p.Wall.Seconds(), 1000*p.CPU.Seconds()/float64(max(1, p.Blocks)), pct(cachePct(p.FromCache, p.FromNode)))
	}
	if f := r.Fixture; f != nil && f.Wall > 0 {
		cpu := medianOf(f.Runs, func(x fixtureRun) time.Duration { return x.CPU })
		fmt.Fprintf(tw, "blocks dir on the recorded Core v31 directory, in process (no node: hashes from chain.json)\t%s\t%.0f\t%.1f\t%.0f\t%.2f / –\t\t\t–\n",
			dur(f.Wall), float64(f.Blocks)/f.Wall.Seconds(), mb(f.BlockBytes)/f.Wall.Seconds(), float64(f.Elements)/f.Wall.Seconds(),
			1000*cpu.Seconds()/float64(f.Blocks))
	}
	fmt.Fprintln(tw)
	for _, sr := range r.Sources {
		m := sr.Summary
		fmt.Fprintf(tw, "%s\tcatch-ups %s; btcd rebuilds %s\n", sr.Name,
			runList(sr.Runs, func(d daemon.Result) time.Duration { return d.CatchUp }),
			runList(r.Btcd, func(b btcdIndexResult) time.Duration { return b.CatchUp }))
		fmt.Fprintf(tw, "\tratio btcd/cfindexd %.2f (from process start on both sides %.2f); catch-up / node floor %.2f\n",
			m.Ratio, m.RatioFromStart, m.CatchUpOverFloor)
		if len(sr.Runs) > 0 {
			d := sr.Runs[0]
			fmt.Fprintf(tw, "\tRSS over the first run, MB at tenths of its life: %s; GC: %d cycles, live heap ≤ %.0f MB, heap goal ≤ %.0f MB\n",
				procstat.RSSCurve(d.RSS, 10), d.GC.Cycles, mb(d.GC.MaxLive), mb(d.GC.MaxGoal))
		}
		fmt.Fprintf(tw, "\tgoal: at least %.0f× btcd's rebuild\t%s\n", goalSyncRatio, verdict(m.MeetsSpeed))
		fmt.Fprintf(tw, "\tgoal: peak RSS ≤ 150 MB\t%s\n", verdict(m.MeetsRSS))
		if m.Verified {
			fmt.Fprintf(tw, "\tfilters\tevery run's store equals btcd's index (%d blocks: hashes, filters, filter headers)\n", s.Blocks)
		}
	}
	if s.Best != "" && len(r.Btcd) > 0 {
		fmt.Fprintf(tw, "goal: cfindexd at least %.0f× btcd's rebuild\t%s with its best source, %s (%.2f×)\n", goalSyncRatio, verdict(s.MeetsBestSpeed), s.Best, s.BestRatio)
	}
	if s.BlocksDirOverP2P > 0 {
		fmt.Fprintf(tw, "goal: blocks dir at least %.0f× txindex over P2P\t%s (%.1f× the blocks/s)\n", goalBlocksDirOverP2P, verdict(s.MeetsBlocksDirGoal), s.BlocksDirOverP2P)
	}
	if f := r.Fixture; f != nil && f.Verified {
		fmt.Fprintf(tw, "Core v31 fixture\t%s: every run's store equals Core's filters and filter headers (%d blocks, all read from Core's files), and so do the %d stale blocks'; runs %s\n",
			f.Dir, f.Blocks, f.Stale, runList(f.Runs, func(x fixtureRun) time.Duration { return x.Wall }))
	}
	if p := r.InProcess; p != nil && p.Connections >= 0 {
		fmt.Fprintf(tw, "RPC connections, in-process run\t%d (%.2f per block; btcd closes each after one HTTP request)\n",
			p.Connections, float64(p.Connections)/float64(max(1, p.Blocks)))
	}
	fmt.Fprintf(tw, "machine load average\t%s before, %s after (other work on the machine shifts every number)\n", r.LoadBefore, r.LoadAfter)
	fmt.Fprintf(tw, "output\t%s\n", r.Out)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range r.SilentPay {
		c.WriteTable(w)
	}
	if p := r.InProcess; p != nil && len(p.Top) > 0 {
		fmt.Fprintf(w, "\nCPU profile of the in-process catch-up (%s, %s), top by flat time:\n", p.Source, p.Profile)
		for _, l := range p.Top {
			fmt.Fprintln(w, "  "+l)
		}
		fmt.Fprintln(w, "\nsame, cumulative, cfindexd's packages only:")
		for _, l := range p.TopCum {
			fmt.Fprintln(w, "  "+l)
		}
	}
	if p := r.InProcess; p != nil && len(p.PeakHeapTop) > 0 {
		fmt.Fprintf(w, "\nheap when the live heap peaked (%.1f MB live), live bytes by allocation site:\n", mb(p.PeakLive))
		for _, l := range p.PeakHeapTop {
			fmt.Fprintln(w, "  "+l)
		}
	}
	if p := r.InProcess; p != nil && len(p.HeapTop) > 0 {
		fmt.Fprintf(w, "\nheap halfway through the catch-up (%s), live bytes by allocation site:\n", p.Heap)
		for _, l := range p.HeapTop {
			fmt.Fprintln(w, "  "+l)
		}
	}
	return nil
}

// chainLine describes the chain in one line.
func (r *syncReport) chainLine() string {
	s := r.Summary
	if m := r.Chain.Mainnet; m != nil {
		from := "generated by this run"
		if r.Chain.Cached {
			from = "from the cache"
		}
		return fmt.Sprintf("mainnet-shaped, simnet: %d blocks (%d of %d transactions), %d transactions, %.1f MB, %d filter elements; %s %s (generation took %s)",
			s.Blocks, m.Shape.Blocks, m.Shape.TxsPerBlock, m.Txs, mb(s.Bytes), s.Elements, from, r.Chain.CacheDir, m.Took.Round(time.Second))
	}
	return fmt.Sprintf("tx-rich, simnet: %d blocks (%d tx-rich), %.1f MB, %d filter elements, built in %s",
		s.Blocks, r.Chain.RichBlocks, mb(s.Bytes), s.Elements, r.Chain.BuildTime.Round(time.Second))
}

// cachePct is the share of prevouts from the cache in percent, -1 when
// nothing was counted.
func cachePct(fromCache, fromNode uint64) float64 {
	if fromCache+fromNode == 0 {
		return -1
	}
	return 100 * float64(fromCache) / float64(fromCache+fromNode)
}

// pct renders a percentage, or "–" for a negative (unknown) one.
func pct(v float64) string {
	if v < 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f %%", v)
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
