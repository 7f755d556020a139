package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/attack"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/daemon"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/load"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/procstat"
)

// classRun is what runHostileClass needs besides the class: the run's
// flags, the daemon every class starts from, btcd's answers, the wallet's
// chain (nil when no class runs BIP-37), where logs go and the class's
// number in the run.
type classRun struct {
	cfg      hostileConfig
	base     daemon.Run
	env      attack.Env
	expected *load.Expected
	wallet   *load.WalletChain
	out      string
	index    int
}

// runHostileClass starts cfindexd on the caught-up store with both
// listeners and the class's flags, runs the class's attack for
// cfg.Duration with the well-behaved clients (one per spot) and, when the
// class runs BIP-37, the honest wallet beside it from Settle on, stops
// cfindexd and returns the row (without its goals: judge adds them).
func runHostileClass(ctx context.Context, cr classRun, class attack.Class) (hostileClassResult, error) {
	res := hostileClassResult{Name: class.Name, Title: class.Title, OpsUnit: class.OpsUnit, FairShare: class.FairShare,
		P99Goal: class.P99Goal(), PeakGoal: class.PeakGoal, PeakUnit: class.PeakUnit}
	if class.Name == "http-idle" {
		res.HTTPConns = cr.env.HTTPConns
	}
	env := cr.env
	p2pAddr, err := freeLoopbackAddr()
	if err != nil {
		return res, err
	}
	httpAddr, err := freeLoopbackAddr()
	if err != nil {
		return res, err
	}
	env.P2PAddr, env.HTTPAddr = p2pAddr, httpAddr
	run := cr.base
	run.LogPath = filepath.Join(cr.out, "cfindexd-"+class.Name+".log")
	run.Extra = append([]string{"--listen=" + p2pAddr, "--httplisten=" + httpAddr}, class.Flags...)
	proc, err := daemon.Start(ctx, run)
	if err != nil {
		return res, err
	}
	defer proc.Kill()
	if err := proc.WaitServing(ctx, p2pAddr, httpAddr, env.Params); err != nil {
		return res, err
	}

	attackCtx, stopAttack := context.WithTimeout(ctx, cr.cfg.Duration)
	defer stopAttack()
	var tally attack.Tally
	var wg sync.WaitGroup
	wg.Go(func() { class.Run(attackCtx, env, &tally) })
	attack.Pause(attackCtx, cr.cfg.Settle)
	spots := class.Spots(cr.index)
	goods := make([]*attack.GoodClient, len(spots))
	for i, s := range spots {
		goods[i] = attack.NewGoodClient(p2pAddr, httpAddr, s.IP, env.Params, cr.expected, uint64(cr.index)<<8+uint64(i))
		wg.Go(func() {
			if s.Where == "address" && class.AddressAfter > cr.cfg.Settle {
				attack.Pause(attackCtx, class.AddressAfter-cr.cfg.Settle)
			}
			goods[i].Run(attackCtx)
		})
	}
	var wallet *load.Wallet
	if class.BIP37() && cr.wallet != nil {
		wallet = load.NewWallet(p2pAddr, walletIP(cr.index), env.Params, cr.wallet, uint64(cr.index))
		wg.Go(func() { wallet.Run(attackCtx) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return res, err
	}
	for i, g := range goods {
		res.Good = append(res.Good, attack.SpotResult{Spot: spots[i], GoodResult: g.Result()})
	}
	if wallet != nil {
		w := wallet.Result()
		res.Wallet = &w
	}
	res.Ops, res.Conns, res.AttackRefused = tally.Ops.Load(), tally.Conns.Load(), tally.Refused.Load()
	res.Peak, res.AttackWrong = tally.Peak.Load(), tally.Wrong.Load()

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
	if res.Counters, err = daemon.Counters(ctx, httpAddr, daemon.WhyCounters); err != nil {
		res.Counters = map[string]float64{"unreadable: " + err.Error(): 0}
	}
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

// walletIP is the honest BIP-37 wallet's source address in the i-th
// class: a /16 of its own, apart from the good clients' 127.250.
func walletIP(i int) string { return fmt.Sprintf("127.251.%d.1", 1+i%250) }

// baselineClass runs no attack: the honest wallet's baseline, measured
// beside the well-behaved clients on a daemon with BIP-37 on.
func baselineClass() attack.Class {
	return attack.Class{
		Name: "bip37-baseline", OpsUnit: "-", Title: "no attack: the honest BIP-37 wallet's baseline",
		Flags: []string{attack.BloomFlag},
		Run:   func(ctx context.Context, _ attack.Env, _ *attack.Tally) { <-ctx.Done() },
	}
}
