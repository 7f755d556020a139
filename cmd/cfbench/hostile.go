package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/attack"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/chains"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/daemon"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/load"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/procstat"
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
	// Duration is each class's attack; the well-behaved clients and the
	// honest BIP-37 wallet run from Settle after its start to its end.
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
	// WalletBaseline is the honest BIP-37 wallet on a daemon with BIP-37
	// on and no attack (when a class runs BIP-37): what each class's
	// wallet is compared with.
	WalletBaseline *load.WalletResult `json:"bip37_wallet_baseline,omitempty"`
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

// hostileFDReserve is what this process keeps of its open file limit
// besides the http-idle class's connections: btcd's RPC clients, the
// other classes' leftovers closing, the well-behaved client, logs.
const hostileFDReserve = 1000

// benchHostile runs the hostile benchmark, logging progress to logw.
func benchHostile(ctx context.Context, cfg hostileConfig, logw io.Writer) (*hostileReport, error) {
	say := func(format string, a ...any) { fmt.Fprintf(logw, "cfbench: "+format+"\n", a...) }
	nofile := procstat.RaiseNoFile()
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
	hashes, err := chains.Hashes(ctx, node, chain.Height)
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

	cr := classRun{cfg: cfg, base: base, expected: expected, out: out,
		env: attack.Env{Params: node.Params(), Hashes: hashes, Expected: expected, HTTPConns: httpConns}}
	if slices.ContainsFunc(cfg.Classes, attack.Class.BIP37) {
		say("honest BIP-37 wallet: fetching the last blocks and btcd's filtered blocks for its filter; its baseline without attack")
		if cr.wallet, err = load.BuildWalletChain(ctx, node.Params(), node.Block, hashes, 1); err != nil {
			return nil, err
		}
		cr.index = len(cfg.Classes)
		res, err := runHostileClass(ctx, cr, baselineClass())
		if err != nil {
			return nil, fmt.Errorf("BIP-37 wallet baseline: %w", err)
		}
		rep.WalletBaseline = res.Wallet
		say("  baseline: %d batches, mean %s (%d matched txs in the window)", res.Wallet.Rounds, dur(res.Wallet.MeanRound), cr.wallet.Matched)
	}
	for i, class := range cfg.Classes {
		cr.index = i
		res, err := runHostileClass(ctx, cr, class)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", class.Name, err)
		}
		res.judge(class, rep.WalletBaseline)
		say("  %s: peak RSS %.1f MB, attack %d %s over %d connections (%d refused); daemon up %v; %d of %d goals met",
			class.Name, mb(res.PeakRSS), res.Ops, class.OpsUnit, res.Conns, res.AttackRefused, res.Up, len(res.Goals)-res.missed(), len(res.Goals))
		for _, g := range res.Good {
			say("    %s client: %d requests, p99 %s, %d refused, %d evicted", g.Where, g.Requests, latency(g.Latency.P99), g.Refused, g.Evicted)
		}
		if w := res.Wallet; w != nil {
			say("    BIP-37 wallet: %d batches (%d filtered blocks received), mean %s (%.2f× baseline), %d refused, %d disconnected, %d wrong",
				w.Rounds, w.Received, dur(w.MeanRound), res.WalletRatio, w.Refused, w.Disconnects, w.Wrong)
		}
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
