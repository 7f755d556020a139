// Command cfindexd follows a Bitcoin node over RPC/ZMQ, builds the BIP-158
// basic filter of every block, chains the BIP-157 filter headers in a bbolt
// store and serves them to light clients.
//
// main only wires components: configuration, logger, store, listeners,
// node client, follower; each long-running part is a value with Run(ctx),
// run in an errgroup that SIGTERM/SIGINT cancel. `cfindexd status` asks a
// running daemon how it is doing (status.go).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/cfindexd/cfindexd/internal/hostres"
	"github.com/cfindexd/cfindexd/netparams"
)

func main() {
	os.Exit(run(os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code. Errors end in
// one line on stderr. environ is the environment (os.Environ).
func run(args, environ []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "status" {
		return runStatus(args[1:], environ, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "verify" {
		return runVerify(args[1:], environ, stdout, stderr)
	}
	args, reindex, err := takeReindexFlag(args)
	if err != nil {
		fmt.Fprintf(stderr, "cfindexd: config: %v\n", err)
		return 2
	}
	cfg, confFile, err := loadConfigFrom(args, environ, stdout)
	if code, done := configDone("cfindexd", err, stdout, stderr); done {
		return code
	}
	log := newLogger(cfg, stderr)
	env := environMap(environ)
	if nw, err := netparams.Lookup(cfg.Chain); err == nil { // else runDaemon reports it
		applyMemoryLimit(cfg, memoryBudgetOf(cfg, nw), func(k string) string { return env[k] }, hostres.CgroupMemoryMax(os.ReadFile), log)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer func() {
		// No delivery happens after Stop returns, so closing ends the
		// signal goroutine.
		signal.Stop(sigs)
		close(sigs)
	}()
	signalled := make(chan time.Time, 1)
	go func() {
		first := true
		for s := range sigs {
			if first {
				signalled <- time.Now()
				log.Info().Str("signal", s.String()).Msg("shutting down: finishing the current batch")
				cancel()
				first = false
				continue
			}
			log.Warn().Str("signal", s.String()).Msg("already shutting down")
		}
	}()

	daemon := guarded(log, "daemon", func() error { return runDaemon(ctx, cfg, confFile, log, reindex) })
	if err := daemon(); err != nil {
		fmt.Fprintf(stderr, "cfindexd: %v\n", err)
		return 1
	}
	ev := log.Info()
	select {
	case at := <-signalled:
		// The daemon's own measure of its shutdown, from the signal to
		// here: what TimeoutStopSec= must cover.
		ev = ev.Str("shutdown", logDur(time.Since(at)))
	default:
	}
	ev.Msg("stopped")
	return 0
}
