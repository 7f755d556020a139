package main

import (
	"bufio"
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/chains"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/daemon"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/load"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/procstat"
	"github.com/cfindexd/cfindexd/p2p/bip37"
)

// Goals of the bip37 benchmark.
const (
	// goalBIP37Throughput: BIP-157 throughput with the BIP-37 load at
	// least 70 % of what it is alone.
	goalBIP37Throughput = 0.70
	// goalBIP37RSS: cfindexd's RSS at most 250 MB under the mixed load.
	goalBIP37RSS = 250e6
)

// bip37Config holds the flags of the bip37 subcommand.
type bip37Config struct {
	commonFlags
	Peers       int
	BloomPeers  int
	Batch       int
	Window      int
	WalletN     int
	FPR         float64
	BloomCPU    int
	Duration    time.Duration
	Warmup      time.Duration
	Rounds      int
	FilterShare float64
	Seed        uint64
	ReqTimeout  time.Duration
}

// parseBIP37Flags parses and validates the bip37 subcommand's flags.
func parseBIP37Flags(args []string, stderr io.Writer) (bip37Config, error) {
	var c bip37Config
	fs := flag.NewFlagSet("cfbench bip37", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.register(fs, 2000, 20*time.Minute)
	fs.IntVar(&c.Peers, "peers", 100, "BIP-157 peers running the serve load (getcfilters/getcfheaders, one request in flight each)")
	fs.IntVar(&c.BloomPeers, "bloompeers", 100, "BIP-37 wallets asking for filtered blocks alongside")
	fs.IntVar(&c.Batch, "batch", 100, "filtered blocks per BIP-37 getdata")
	fs.IntVar(&c.Window, "bloomwindow", 300, "BIP-37 wallets sync the chain's most recent this many blocks (wallets back after two days offline), a batch from a random height at a time; with -bloomwindow=0 they scan the whole tx-rich chain, which mostly measures fetching blocks from the node")
	fs.IntVar(&c.WalletN, "walletn", 200, "elements in each BIP-37 wallet's filter (n)")
	fs.Float64Var(&c.FPR, "fpr", 0.0001, "false-positive rate each BIP-37 wallet's filter is sized for (p)")
	fs.IntVar(&c.BloomCPU, "bloomcpu", 0, "cfindexd's --bloomcpu (0: its default)")
	fs.DurationVar(&c.Duration, "duration", 10*time.Second, "measured window of each phase")
	fs.IntVar(&c.Rounds, "rounds", 3, "rounds of the two phases, alternated (the median round is reported)")
	fs.DurationVar(&c.Warmup, "warmup", 2*time.Second, "load before each window, not counted")
	fs.Float64Var(&c.FilterShare, "filtershare", 0.5, "fraction of BIP-157 requests that are getcfilters (the rest getcfheaders)")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of every peer's requests and every wallet's filter")
	fs.DurationVar(&c.ReqTimeout, "reqtimeout", 60*time.Second, "bound on one request's whole answer")
	if err := parseFlagSet(fs, args); err != nil {
		return c, err
	}
	return c, c.validate()
}

// validate checks the flags' ranges.
func (c bip37Config) validate() error {
	switch {
	case c.Peers < 1 || c.Peers > 1000:
		return fmt.Errorf("%w: -peers %d is outside 1..1000", errUsage, c.Peers)
	case c.BloomPeers < 1 || c.BloomPeers > 1000:
		return fmt.Errorf("%w: -bloompeers %d is outside 1..1000", errUsage, c.BloomPeers)
	case c.Batch < 1 || c.Batch > 50_000:
		return fmt.Errorf("%w: -batch %d is outside 1..50000", errUsage, c.Batch)
	case c.Window < 0:
		return fmt.Errorf("%w: -bloomwindow %d is negative", errUsage, c.Window)
	case c.WalletN < 1 || c.WalletN > 100_000:
		return fmt.Errorf("%w: -walletn %d is outside 1..100000", errUsage, c.WalletN)
	case !(c.FPR > 0 && c.FPR < 1):
		return fmt.Errorf("%w: -fpr %g is outside (0, 1)", errUsage, c.FPR)
	case c.BloomCPU < 0 || c.BloomCPU > 100:
		return fmt.Errorf("%w: -bloomcpu %d is outside 0..100", errUsage, c.BloomCPU)
	case c.Rounds < 1 || c.Rounds > 100:
		return fmt.Errorf("%w: -rounds %d is outside 1..100", errUsage, c.Rounds)
	case c.Duration < 100*time.Millisecond:
		return fmt.Errorf("%w: -duration %s is under 100ms", errUsage, c.Duration)
	case c.Warmup < 0:
		return fmt.Errorf("%w: -warmup %s is negative", errUsage, c.Warmup)
	case c.FilterShare < 0 || c.FilterShare > 1:
		return fmt.Errorf("%w: -filtershare %g is outside 0..1", errUsage, c.FilterShare)
	case c.ReqTimeout <= 0:
		return fmt.Errorf("%w: -reqtimeout %s must be positive", errUsage, c.ReqTimeout)
	}
	return c.commonFlags.validate()
}

// bip37Report is the result of the bip37 benchmark.
type bip37Report struct {
	Chain      chains.Info `json:"chain"`
	Out        string      `json:"out_dir"`
	LoadBefore string      `json:"load_avg_before"`
	LoadAfter  string      `json:"load_avg_after"`
	// Alone, Mixed and BIP37 are the median round's (by its ratio);
	// Ratios are every round's.
	Alone  load.Result      `json:"bip157_alone"`
	Mixed  load.Result      `json:"bip157_with_bip37"`
	BIP37  load.BloomResult `json:"bip37"`
	Ratios []float64        `json:"round_ratios"`
	// BloomWorkSeconds is cfindexd's own count of BIP-37 CPU time over the
	// mixed phase (cfindexd_bip37_work_seconds_total).
	BloomWorkSeconds float64 `json:"bip37_work_seconds"`
	BloomCPU         int     `json:"bloomcpu_percent"`
	WalletN          int     `json:"wallet_elements"`
	Window           int     `json:"bloom_window_blocks"`
	AvgBlockBytes    int     `json:"avg_block_bytes"`
	FPR              float64 `json:"wallet_fpr"`
	Batch            int     `json:"batch"`
	// GeneratorCPU is cfbench's own CPU share (cores) in each phase: the
	// load generator shares the machine with cfindexd.
	GeneratorCPUAlone float64 `json:"generator_cpu_alone"`
	GeneratorCPUMixed float64 `json:"generator_cpu_mixed"`
	// MixedMaxRSS is the largest RSS sampled during the mixed phase;
	// PeakRSS the process's peak over its whole life (catch-up included).
	MixedMaxRSS int64 `json:"mixed_max_rss_bytes"`
	PeakRSS     int64 `json:"peak_rss_bytes"`
	Summary     struct {
		ThroughputRatio float64 `json:"bip157_throughput_ratio"`
		MeetsThroughput bool    `json:"meets_throughput_goal"`
		MeetsRSS        bool    `json:"meets_rss_goal"`
		Clean           bool    `json:"no_errors"`
	} `json:"summary"`
}

// bip37Round is one round: the BIP-157 load alone, then beside the
// BIP-37 load.
type bip37Round struct {
	Alone, Mixed                         load.Result
	BIP37                                load.BloomResult
	BloomWorkSeconds                     float64
	GeneratorCPUAlone, GeneratorCPUMixed float64
	MixedMaxRSS                          int64
	Ratio                                float64
}

// runBIP37 is the bip37 subcommand.
func runBIP37(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runSubcommand(ctx, args, stdout, stderr, parseBIP37Flags, benchBIP37)
}

// benchBIP37 runs the BIP-157 serve load alone and then beside the BIP-37
// load, against one cfindexd, logging progress to logw.
func benchBIP37(ctx context.Context, cfg bip37Config, logw io.Writer) (*bip37Report, error) {
	say := func(format string, a ...any) { fmt.Fprintf(logw, "cfbench: "+format+"\n", a...) }
	ws, err := newWorkspace(ctx, "bip37", cfg.Keep, cfg.Out, cfg.CFIndexd, say)
	if err != nil {
		return nil, err
	}
	defer ws.cleanup()
	say("starting btcd (simnet, --txindex) and building %d tx-rich blocks", cfg.Blocks)
	node, chain, err := chains.Build(ctx, filepath.Join(ws.work, "btcd"), cfg.Blocks, cfg.WalletSeed)
	if node != nil {
		defer node.Stop()
	}
	if err != nil {
		return nil, err
	}
	hashes, err := chains.Hashes(ctx, node, chain.Height)
	if err != nil {
		return nil, err
	}
	richFrom := chain.Height + 1 - uint32(cfg.Blocks)
	sample := make([]int, 0, 20)
	for i := range 20 {
		sample = append(sample, int(richFrom)+i*(cfg.Blocks/20+1))
	}
	var sampleHashes = hashes[:0:0]
	for _, h := range sample {
		if h <= int(chain.Height) {
			sampleHashes = append(sampleHashes, hashes[h])
		}
	}
	elements, avgBlock, err := load.ChainElements(ctx, node.Block, sampleHashes)
	if err != nil {
		return nil, fmt.Errorf("read blocks: %w", err)
	}
	scanFrom := richFrom
	if cfg.Window > 0 && chain.Height+1-uint32(cfg.Window) > richFrom {
		scanFrom = chain.Height + 1 - uint32(cfg.Window)
	}

	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	httpAddr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	limit := strconv.Itoa(cfg.Peers + cfg.BloomPeers + 10)
	extra := []string{"--listen=" + addr, "--httplisten=" + httpAddr, "--maxpeers=" + limit, "--maxpeersperip=" + limit,
		"--maxpeerspersubnet=" + limit, "--peerbloomfilters=true", "--maxuploadtarget=0"}
	if cfg.BloomCPU > 0 {
		extra = append(extra, "--bloomcpu="+strconv.Itoa(cfg.BloomCPU))
	}
	run := daemon.Run{Binary: ws.binary, Node: node, DataDir: filepath.Join(ws.work, "cfindexd-data"),
		LogPath: filepath.Join(ws.out, "cfindexd.log"), TipHeight: chain.Height, Workers: 8, BatchBlocks: 500, Extra: extra}
	say("cfindexd: catching up, then serving BIP-157 and BIP-37 on %s", addr)
	proc, err := daemon.Start(ctx, run)
	if err != nil {
		return nil, err
	}
	defer proc.Kill()
	if _, err := proc.WaitFor(ctx, func(l daemon.LogLine) bool { return l.ReachedHeight(chain.Height) }); err != nil {
		return nil, err
	}
	pid := proc.Pid()
	rep := &bip37Report{Chain: chain, Out: ws.out, LoadBefore: procstat.LoadAverage(), BloomCPU: cfg.BloomCPU,
		WalletN: cfg.WalletN, FPR: cfg.FPR, Batch: cfg.Batch, AvgBlockBytes: avgBlock}
	if rep.BloomCPU == 0 {
		rep.BloomCPU = int(bip37.DefaultCPUShare * 100)
	}
	expected, err := load.BuildExpected(ctx, node, node.Params(), hashes)
	if err != nil {
		return nil, err
	}
	lcfg := load.Config{Params: node.Params(), Hashes: hashes, Expected: expected, Peers: cfg.Peers, Warmup: cfg.Warmup, Duration: cfg.Duration,
		FilterShare: cfg.FilterShare, Seed: cfg.Seed, RequestTimeout: cfg.ReqTimeout}

	self := os.Getpid()
	rep.Window = int(chain.Height + 1 - scanFrom)
	bcfg := load.BloomConfig{Addr: addr, Params: node.Params(), Hashes: hashes, From: scanFrom,
		Peers: cfg.BloomPeers, Batch: cfg.Batch, Elements: elements, WalletN: cfg.WalletN, FPR: cfg.FPR,
		Seed: cfg.Seed, RequestTimeout: cfg.ReqTimeout}
	// Rounds alternate the two phases, so that other work on the machine
	// shifting over the run shifts both alike; each round's ratio compares
	// neighbours, and the median round is reported.
	var rounds []bip37Round
	for r := range cfg.Rounds {
		var rd bip37Round
		say("round %d/%d, phase 1: %d BIP-157 peers alone, %s warm-up, %s measured", r+1, cfg.Rounds, cfg.Peers, cfg.Warmup, cfg.Duration)
		gen0, t0 := procstat.CPU(self), time.Now()
		if rd.Alone, err = measureLoad(ctx, lcfg, addr, pid); err != nil {
			return nil, fmt.Errorf("BIP-157 alone: %w", err)
		}
		rd.GeneratorCPUAlone = (procstat.CPU(self) - gen0).Seconds() / time.Since(t0).Seconds()

		say("round %d/%d, phase 2: the same load beside %d BIP-37 wallets (n = %d, p = %g, %d filtered blocks per getdata, the last %d blocks of %d bytes on average)",
			r+1, cfg.Rounds, cfg.BloomPeers, cfg.WalletN, cfg.FPR, cfg.Batch, rep.Window, avgBlock)
		bl, err := load.StartBloom(ctx, bcfg)
		if err != nil {
			return nil, err
		}
		work0 := scrapeMetric(httpAddr, "cfindexd_bip37_work_seconds_total")
		// The BIP-37 window is the BIP-157 load's: load.Run lines its
		// peers up 50 ms after it starts, then warms up.
		begin := time.Now()
		bl.Measure(begin.Add(50*time.Millisecond+cfg.Warmup), begin.Add(50*time.Millisecond+cfg.Warmup+cfg.Duration))
		rssDone := make(chan struct{})
		rssSamples := procstat.SampleRSS(pid, time.Now(), rssDone)
		gen0, t0 = procstat.CPU(self), time.Now()
		rd.Mixed, err = measureLoad(ctx, lcfg, addr, pid)
		rd.GeneratorCPUMixed = (procstat.CPU(self) - gen0).Seconds() / time.Since(t0).Seconds()
		close(rssDone)
		rd.MixedMaxRSS, _, _ = procstat.RSSPeaks(<-rssSamples)
		rd.BIP37 = bl.Stop()
		if err != nil {
			return nil, fmt.Errorf("BIP-157 with BIP-37: %w", err)
		}
		rd.BloomWorkSeconds = scrapeMetric(httpAddr, "cfindexd_bip37_work_seconds_total") - work0
		rd.Ratio = load.Ratio(rd.Mixed.FiltersPerS, rd.Alone.FiltersPerS)
		say("round %d/%d: BIP-157 with BIP-37 at %.0f %% of alone", r+1, cfg.Rounds, 100*rd.Ratio)
		rounds = append(rounds, rd)
	}
	rep.Ratios = make([]float64, len(rounds))
	for i, rd := range rounds {
		rep.Ratios[i] = rd.Ratio
		rep.MixedMaxRSS = max(rep.MixedMaxRSS, rd.MixedMaxRSS)
	}
	med := slices.Clone(rounds)
	slices.SortFunc(med, func(a, b bip37Round) int { return cmp.Compare(a.Ratio, b.Ratio) })
	m := med[len(med)/2]
	rep.Alone, rep.Mixed, rep.BIP37, rep.BloomWorkSeconds = m.Alone, m.Mixed, m.BIP37, m.BloomWorkSeconds
	rep.GeneratorCPUAlone, rep.GeneratorCPUMixed = m.GeneratorCPUAlone, m.GeneratorCPUMixed
	errs := 0
	for _, rd := range rounds {
		errs += rd.Alone.Errors + rd.Mixed.Errors + rd.BIP37.Errors
	}
	rep.PeakRSS = procstat.PeakRSS(pid)

	state, err := proc.Terminate(daemon.StopLimit)
	if err != nil {
		return nil, err
	}
	rep.PeakRSS = procstat.ChildPeakRSS(rep.PeakRSS, state)
	rep.LoadAfter = procstat.LoadAverage()
	s := &rep.Summary
	s.ThroughputRatio = m.Ratio
	s.MeetsThroughput = s.ThroughputRatio >= goalBIP37Throughput
	s.MeetsRSS = rep.MixedMaxRSS > 0 && rep.MixedMaxRSS <= goalBIP37RSS
	s.Clean = errs == 0 && rep.BIP37.FilteredBlocks > 0
	return rep, nil
}

// scrapeMetric reads one unlabelled sample from cfindexd's /metrics, or -1.
func scrapeMetric(httpAddr, name string) float64 {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			if v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64); err == nil {
				return v
			}
		}
	}
	return -1
}

// writeTable prints the report for people.
func (r *bip37Report) writeTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	s, b := r.Summary, r.BIP37
	fmt.Fprintf(tw, "chain\tsimnet, %d blocks (%d tx-rich)\n", r.Chain.Height+1, r.Chain.RichBlocks)
	fmt.Fprintf(tw, "BIP-157 load\t%d peers, one request each in flight, %s measured after warm-up, alone then beside the BIP-37 load, %d rounds (the median shown)\n", r.Alone.Peers, r.Alone.Window, len(r.Ratios))
	fmt.Fprintf(tw, "BIP-37 load\t%d wallets, filters for n = %d at p = %g with 5 %% noise (%d bytes, %d hash functions), getdata of %d filtered blocks at a time from the last %d blocks (%d bytes each on average)\n",
		b.Peers, r.WalletN, r.FPR, b.FilterBytes, b.FilterHashes, r.Batch, r.Window, r.AvgBlockBytes)
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "BIP-157\tfilters/s\tMB/s\tgetcfilters p50\tp99\tgetcfheaders p50\tp99\trequests\terrors\tserver CPU")
	row := func(name string, l load.Result) {
		fmt.Fprintf(tw, "%s\t%.0f\t%.1f\t%s\t%s\t%s\t%s\t%d\t%d\t%.0f %%\n", name, l.FiltersPerS, l.MBPerS,
			durOrDash(l.FilterLatency.P50), durOrDash(l.FilterLatency.P99), durOrDash(l.HeaderLatency.P50), durOrDash(l.HeaderLatency.P99),
			l.FilterReqs+l.HeaderReqs, l.Errors, 100*l.ServerCPUShare)
	}
	row("alone", r.Alone)
	row("with BIP-37", r.Mixed)
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "BIP-37 served\t%.0f filtered blocks/s (%d matched txs), %.1f MB/s, batch p50 %s p99 %s, %d errors; BIP-37 work %.1f s of CPU over the mixed phase (bloomcpu %d %%)\n",
		b.BlocksPerS, b.MatchedTxs, b.MBPerS, durOrDash(b.BatchLatency.P50), durOrDash(b.BatchLatency.P99), b.Errors, r.BloomWorkSeconds, r.BloomCPU)
	fmt.Fprintf(tw, "load generator CPU\t%.0f %% alone, %.0f %% with BIP-37 (cfbench itself, on the same machine)\n", 100*r.GeneratorCPUAlone, 100*r.GeneratorCPUMixed)
	ratios := make([]string, len(r.Ratios))
	for i, x := range r.Ratios {
		ratios[i] = fmt.Sprintf("%.0f %%", 100*x)
	}
	fmt.Fprintf(tw, "goal: BIP-157 with BIP-37 ≥ 70 %% of alone\t%.0f %% (median of rounds: %s): %s\n", 100*s.ThroughputRatio, strings.Join(ratios, ", "), verdict(s.MeetsThroughput))
	fmt.Fprintf(tw, "goal: cfindexd RSS ≤ 250 MB\t%.1f MB at most during the mixed load: %s (peak over its life, catch-up included: %.1f MB)\n",
		mb(r.MixedMaxRSS), verdict(s.MeetsRSS), mb(r.PeakRSS))
	for _, e := range []struct {
		name string
		n    int
		err  string
	}{{"BIP-157 alone", r.Alone.Errors, r.Alone.FirstError}, {"BIP-157 mixed", r.Mixed.Errors, r.Mixed.FirstError}, {"BIP-37", b.Errors, b.FirstError}} {
		if e.n > 0 {
			fmt.Fprintf(tw, "%s errors\t%d peers stopped; first: %s\n", e.name, e.n, e.err)
		}
	}
	fmt.Fprintf(tw, "machine load average\t%s before, %s after (other work on the machine shifts every number)\n", r.LoadBefore, r.LoadAfter)
	fmt.Fprintf(tw, "output\t%s\n", r.Out)
	return tw.Flush()
}
