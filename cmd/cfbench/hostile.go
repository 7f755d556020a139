package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/attack"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/chains"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/daemon"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/load"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/procstat"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// Goals of cfbench hostile.
const (
	hostileRSSGoal = 250_000_000 // bytes of peak RSS in every class
	hostileP99Goal = 2 * time.Second
)

// hostileConfig holds the flags of the hostile subcommand.
type hostileConfig struct {
	commonFlags
	// Chain, TxsPerBlock and CacheRoot select the chain as for sync:
	// mainnet-shaped (mainnet-size filters, cached) or the small tx-rich
	// one.
	Chain       string
	TxsPerBlock int
	CacheRoot   string
	// Duration is each class's attack; the well-behaved client runs from
	// Settle after its start to its end.
	Duration time.Duration
	Settle   time.Duration
	// HTTPConns is how many idle HTTP connections the http-idle class
	// holds (at most what this process's open file limit allows).
	HTTPConns int
	// Classes are the classes to run (all by default).
	Classes   []attack.Class
	classList string
}

// parseHostileFlags parses and validates the hostile subcommand's flags.
func parseHostileFlags(args []string, stderr io.Writer) (hostileConfig, error) {
	var c hostileConfig
	fs := flag.NewFlagSet("cfbench hostile", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.register(fs, 500, 60*time.Minute)
	fs.StringVar(&c.Chain, "chain", chains.Mainnet, "chain: mainnet (mainnet-shaped, mainnet-size filters, generated once and cached) or rich (the small tx-rich chain, built every run)")
	fs.IntVar(&c.TxsPerBlock, "txs", 2000, "transactions per block of the mainnet-shaped chain")
	fs.StringVar(&c.CacheRoot, "cache", "", "where mainnet-shaped chains are cached (default: the user cache directory's cfindexd-bench)")
	fs.DurationVar(&c.Duration, "duration", 30*time.Second, "attack per class")
	fs.DurationVar(&c.Settle, "settle", 0, "time the attack runs before the well-behaved client starts (default: a tenth of -duration, at most 3s)")
	fs.IntVar(&c.HTTPConns, "httpconns", 20_000, "idle HTTP connections of the http-idle class (bounded by the open file limit)")
	var names []string
	for _, cl := range attack.Classes() {
		names = append(names, cl.Name)
	}
	fs.StringVar(&c.classList, "classes", strings.Join(names, ","), "comma-separated attack classes to run: "+strings.Join(names, ", "))
	if err := parseFlagSet(fs, args); err != nil {
		return c, err
	}
	return c, c.validate()
}

// validate checks the flags and resolves -classes.
func (c *hostileConfig) validate() error {
	switch {
	case c.Chain != chains.Mainnet && c.Chain != chains.Rich:
		return fmt.Errorf("%w: -chain %q is neither %s nor %s", errUsage, c.Chain, chains.Mainnet, chains.Rich)
	case c.Duration < 500*time.Millisecond:
		return fmt.Errorf("%w: -duration %s is under 500ms", errUsage, c.Duration)
	case c.Settle < 0 || c.Settle >= c.Duration:
		return fmt.Errorf("%w: -settle %s is outside 0..-duration", errUsage, c.Settle)
	case c.HTTPConns < 1 || c.HTTPConns > 100_000:
		return fmt.Errorf("%w: -httpconns %d is outside 1..100000", errUsage, c.HTTPConns)
	}
	if c.Settle == 0 {
		c.Settle = min(c.Duration/10, 3*time.Second)
	}
	all := attack.Classes()
	c.Classes = nil
	for name := range strings.SplitSeq(c.classList, ",") {
		i := slices.IndexFunc(all, func(cl attack.Class) bool { return cl.Name == strings.TrimSpace(name) })
		if i < 0 {
			return fmt.Errorf("%w: -classes: unknown class %q", errUsage, name)
		}
		c.Classes = append(c.Classes, all[i])
	}
	if c.Chain == chains.Mainnet {
		sc := c.sync()
		if err := sc.shape().Validate(); err != nil {
			return fmt.Errorf("%w: -blocks/-txs: %w", errUsage, err)
		}
	}
	return c.commonFlags.validate()
}

// sync is the syncConfig that selects the same chain.
func (c hostileConfig) sync() syncConfig {
	return syncConfig{commonFlags: c.commonFlags, Chain: c.Chain, TxsPerBlock: c.TxsPerBlock, CacheRoot: c.CacheRoot}
}

// hostileClassResult is one class's row.
type hostileClassResult struct {
	Name    string `json:"name"`
	Title   string `json:"title"`
	OpsUnit string `json:"ops_unit"`
	// Ops, Conns and AttackRefused are the attack's tally.
	Ops           int64 `json:"attack_ops"`
	Conns         int64 `json:"attack_conns"`
	AttackRefused int64 `json:"attack_refused"`
	// PeakRSS is cfindexd's peak resident set (VmHWM) over its life up to
	// the end of the attack: a fresh process per class, started on the
	// caught-up store.
	PeakRSS int64 `json:"peak_rss_bytes"`
	// Good is the well-behaved client's view.
	Good attack.GoodResult `json:"good_client"`
	// Up is true when cfindexd ran through the attack and exited 0 on
	// SIGTERM.
	Up      bool   `json:"daemon_up"`
	UpError string `json:"daemon_error,omitempty"`
	// HTTPConns is the idle connections the http-idle class aimed for.
	HTTPConns int `json:"http_conns,omitempty"`
}

// met tells whether the class met every goal.
func (r hostileClassResult) met() bool {
	return r.PeakRSS <= hostileRSSGoal && r.Good.Refused == 0 && r.Good.Requests > 0 &&
		r.Good.Latency.P99 <= hostileP99Goal && r.Up
}

// hostileReport is the whole run.
type hostileReport struct {
	Chain chains.Info `json:"chain"`
	// FilterSize is the mean filter's size (with its length prefix) over
	// the chain, RichFilterSize over its transaction-rich blocks (the
	// mainnet-shaped ones).
	FilterSize     float64              `json:"mean_filter_bytes"`
	RichFilterSize float64              `json:"mean_rich_filter_bytes"`
	Duration       time.Duration        `json:"duration_ns"`
	Classes        []hostileClassResult `json:"classes"`
	// StoreIntact is true when, after every class, every block hash,
	// filter and filter header of the store equals btcd's.
	StoreIntact bool   `json:"store_intact"`
	StoreError  string `json:"store_error,omitempty"`
	NoFile      uint64 `json:"rlimit_nofile"`
	LoadBefore  string `json:"load_before"`
	LoadAfter   string `json:"load_after"`
	Out         string `json:"out"`
}

// runHostile is the hostile subcommand.
func runHostile(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runSubcommand(ctx, args, stdout, stderr, parseHostileFlags, benchHostile)
}

// raiseNoFile raises this process's open file limit to its hard limit
// (children inherit it) and returns the soft limit in force.
func raiseNoFile() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 1024
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = raised.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			lim = raised
		}
	}
	return lim.Cur
}

// hostileFDReserve is what this process keeps of its open file limit
// besides the http-idle class's connections: btcd's RPC clients, the
// other classes' leftovers closing, the well-behaved client, logs.
const hostileFDReserve = 1000

// benchHostile runs the hostile benchmark, logging progress to logw.
func benchHostile(ctx context.Context, cfg hostileConfig, logw io.Writer) (*hostileReport, error) {
	say := func(format string, a ...any) { fmt.Fprintf(logw, "cfbench: "+format+"\n", a...) }
	nofile := raiseNoFile()
	httpConns := cfg.HTTPConns
	if limit := int(nofile) - hostileFDReserve; httpConns > limit {
		say("open file limit %d: the http-idle class holds %d connections instead of %d", nofile, max(limit, 1), httpConns)
		httpConns = max(limit, 1)
	}
	ws, err := newWorkspace(ctx, "hostile", cfg.Keep, cfg.Out, cfg.CFIndexd, say)
	if err != nil {
		return nil, err
	}
	defer ws.cleanup()
	work, out, bin := ws.work, ws.out, ws.binary

	node, chain, err := startSyncChain(ctx, cfg.sync(), filepath.Join(work, "btcd"), say)
	if node != nil {
		defer node.Stop()
	}
	if err != nil {
		return nil, err
	}
	hashes, err := chainHashes(ctx, node, chain.Height)
	if err != nil {
		return nil, err
	}
	say("chain: %d blocks; fetching btcd's filters (every answer is checked against them)", len(hashes))
	expected, err := load.BuildExpected(ctx, node, node.Params(), hashes)
	if err != nil {
		return nil, err
	}
	rep := &hostileReport{Chain: chain, Duration: cfg.Duration, NoFile: nofile, Out: out, LoadBefore: procstat.LoadAverage()}
	rep.FilterSize, rep.RichFilterSize = expected.MeanFilterSize(0), expected.MeanFilterSize(richFrom(chain))

	dataDir := filepath.Join(work, "cfindexd-data")
	base := daemon.Run{Binary: bin, Node: node, DataDir: dataDir, TipHeight: chain.Height, Workers: 8, BatchBlocks: 500}
	say("cfindexd: catching up to height %d", chain.Height)
	catchUp := base
	catchUp.LogPath = filepath.Join(out, "cfindexd-catchup.log")
	if _, err := daemon.Measure(ctx, catchUp); err != nil {
		return nil, fmt.Errorf("catch-up: %w", err)
	}

	for i, class := range cfg.Classes {
		env := attack.Env{Params: node.Params(), Hashes: hashes, HTTPConns: httpConns}
		res, err := runHostileClass(ctx, cfg, base, class, env, expected, out, uint64(i))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", class.Name, err)
		}
		say("  %s: peak RSS %.1f MB, good client %d requests, p99 %s, %d refused; attack %d %s over %d connections (%d refused); daemon up %v",
			class.Name, mb(res.PeakRSS), res.Good.Requests, dur(res.Good.Latency.P99), res.Good.Refused,
			res.Ops, class.OpsUnit, res.Conns, res.AttackRefused, res.Up)
		rep.Classes = append(rep.Classes, res)
	}

	say("checking every filter and filter header of the store against btcd's")
	oracle, err := node.FilterChain(ctx)
	if err != nil {
		return nil, fmt.Errorf("btcd's filters: %w", err)
	}
	if err := verifyDaemonStore(dataDir, node, oracle); err != nil {
		rep.StoreError = err.Error()
	} else {
		rep.StoreIntact = true
	}
	rep.LoadAfter = procstat.LoadAverage()
	return rep, nil
}

// runHostileClass starts cfindexd on the caught-up store with both
// listeners, runs the class's attack for cfg.Duration with the
// well-behaved client beside it, stops cfindexd and returns the row.
func runHostileClass(ctx context.Context, cfg hostileConfig, base daemon.Run, class attack.Class, env attack.Env, expected *load.Expected, out string, seed uint64) (hostileClassResult, error) {
	res := hostileClassResult{Name: class.Name, Title: class.Title, OpsUnit: class.OpsUnit}
	if class.Name == "http-idle" {
		res.HTTPConns = env.HTTPConns
	}
	p2pAddr, err := freeLoopbackAddr()
	if err != nil {
		return res, err
	}
	httpAddr, err := freeLoopbackAddr()
	if err != nil {
		return res, err
	}
	env.P2PAddr, env.HTTPAddr = p2pAddr, httpAddr
	run := base
	run.LogPath = filepath.Join(out, "cfindexd-"+class.Name+".log")
	run.Extra = append([]string{"--listen=" + p2pAddr, "--httplisten=" + httpAddr}, class.Flags...)
	proc, err := daemon.Start(ctx, run)
	if err != nil {
		return res, err
	}
	defer proc.Kill()
	if err := waitServing(ctx, proc, env); err != nil {
		return res, err
	}

	attackCtx, stopAttack := context.WithTimeout(ctx, cfg.Duration)
	defer stopAttack()
	var tally attack.Tally
	attackDone := make(chan struct{})
	go func() {
		defer close(attackDone)
		class.Run(attackCtx, env, &tally)
	}()
	attack.Pause(attackCtx, cfg.Settle)
	good := attack.NewGoodClient(p2pAddr, httpAddr, class.GoodIP, env.Params, expected, seed)
	good.Run(attackCtx)
	<-attackDone
	if err := ctx.Err(); err != nil {
		return res, err
	}
	res.Good = good.Result()
	res.Ops, res.Conns, res.AttackRefused = tally.Ops.Load(), tally.Conns.Load(), tally.Refused.Load()

	select {
	case <-proc.Exited():
		res.UpError = fmt.Sprintf("cfindexd exited during the attack (%v); last line: %s", proc.ExitErr(), proc.LastLine())
		return res, nil
	default:
	}
	// VmHWM, not rusage's ru_maxrss: the kernel folds the RSS of the
	// process that exec'd into the child's ru_maxrss, and Go's fork shares
	// this process's memory until exec, so ru_maxrss would be at least
	// cfbench's own RSS at that moment (tens of MB with 20,000 idle HTTP
	// connections' goroutines).
	res.PeakRSS = procstat.PeakRSS(proc.Pid())
	state, err := proc.Terminate(daemon.StopLimit)
	if err != nil {
		res.UpError = err.Error()
		return res, nil
	}
	res.Up = state.Success()
	if !res.Up {
		res.UpError = fmt.Sprintf("cfindexd exited with %s after SIGTERM", state)
	}
	return res, nil
}

// waitServing waits until cfindexd answers a P2P handshake and its
// readiness check over HTTP.
func waitServing(ctx context.Context, proc *daemon.Proc, env attack.Env) error {
	deadline := time.Now().Add(2 * time.Minute)
	client := &http.Client{Timeout: 5 * time.Second}
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-proc.Exited():
			return fmt.Errorf("cfindexd exited at start (%v); last line: %s", proc.ExitErr(), proc.LastLine())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		p, err := load.Dial(env.P2PAddr, env.Params, 1, 5*time.Second)
		if err != nil {
			last = err
			continue
		}
		p.Close()
		resp, err := client.Get("http://" + env.HTTPAddr + "/readyz")
		if err != nil {
			last = err
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		last = errors.New("readyz: " + resp.Status)
	}
	return fmt.Errorf("cfindexd not serving within 2 minutes: %w", last)
}

// writeTable prints the report.
func (r *hostileReport) writeTable(w io.Writer) error {
	fmt.Fprintf(w, "cfbench hostile: %d blocks (%s chain), filters %.0f bytes on average (%.0f in the tx-rich blocks), %s per class, load average %s before, %s after\n",
		r.Chain.Height+1, r.Chain.Kind, r.FilterSize, r.RichFilterSize, r.Duration, r.LoadBefore, r.LoadAfter)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "class\tpeak RSS\tgood requests\tp50\tp99\tmax\trefused\tdaemon up\tattack\tgoals\t")
	rssMet, refusedMet, p99Met, upMet := true, true, true, true
	for _, c := range r.Classes {
		fmt.Fprintf(tw, "%s\t%.1f MB\t%d\t%s\t%s\t%s\t%d\t%v\t%d %s / %d conns\t%s\t\n",
			c.Name, mb(c.PeakRSS), c.Good.Requests, latency(c.Good.Latency.P50), latency(c.Good.Latency.P99), latency(c.Good.Latency.Max),
			c.Good.Refused, c.Up, c.Ops, c.OpsUnit, c.Conns, verdict(c.met()))
		rssMet = rssMet && c.PeakRSS <= hostileRSSGoal
		refusedMet = refusedMet && c.Good.Refused == 0 && c.Good.Requests > 0
		p99Met = p99Met && c.Good.Latency.P99 <= hostileP99Goal
		upMet = upMet && c.Up
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range r.Classes {
		if c.Good.FirstRefusal != "" {
			fmt.Fprintf(w, "  %s: first refusal of the well-behaved client (%d bulk of %d): %s\n", c.Name, c.Good.BulkRefused, c.Good.Refused, c.Good.FirstRefusal)
		}
		if c.UpError != "" {
			fmt.Fprintf(w, "  %s: %s\n", c.Name, c.UpError)
		}
		if p99 := c.Good.Latency.P99; p99 > hostileP99Goal/4 {
			fmt.Fprintf(w, "  %s: the well-behaved client's p99 by request: getcfilters %s, getcfheaders %s, REST filter %s, bulk file %s\n", c.Name,
				latency(c.Good.ByKind["getcfilters"].P99), latency(c.Good.ByKind["getcfheaders"].P99), latency(c.Good.ByKind["rest"].P99), latency(c.Good.ByKind["bulk"].P99))
		}
		if c.HTTPConns > 0 {
			fmt.Fprintf(w, "  %s: %d idle connections aimed for (open file limit %d)\n", c.Name, c.HTTPConns, r.NoFile)
		}
	}
	fmt.Fprintf(w, "goal: peak RSS ≤ %d MB in every class: %s\n", hostileRSSGoal/1_000_000, verdict(rssMet))
	fmt.Fprintf(w, "goal: the well-behaved client never refused: %s\n", verdict(refusedMet))
	fmt.Fprintf(w, "goal: its p99 ≤ %s: %s\n", hostileP99Goal, verdict(p99Met))
	fmt.Fprintf(w, "goal: cfindexd up through every class: %s\n", verdict(upMet))
	store := verdict(r.StoreIntact)
	if r.StoreError != "" {
		store += " (" + r.StoreError + ")"
	}
	fmt.Fprintf(w, "goal: store intact (every filter and filter header equal to btcd's): %s\n", store)
	fmt.Fprintf(w, "logs: %s\n", r.Out)
	return nil
}

// latency renders a latency with three significant digits or so.
func latency(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	}
	return dur(d)
}

// richFrom is the height of the chain's first transaction-rich block: the
// mainnet-shaped chain says; the tx-rich chain's are its last RichBlocks.
func richFrom(chain chains.Info) uint32 {
	if chain.Mainnet != nil {
		return uint32(chain.Mainnet.FirstRich)
	}
	return chain.Height + 1 - min(uint32(chain.RichBlocks), chain.Height+1)
}
