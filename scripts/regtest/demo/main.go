// Command demo is cfindexd's demo: one command that starts a real regtest
// node, mines a chain with transactions, starts cfindexd against it, syncs a
// neutrino light client from cfindexd alone, prints what the client saw and
// cleans up. It is run through its launcher, scripts/regtest, which builds
// it and passes its arguments on:
//
//	go run ./scripts/regtest         # run the demo start to finish (Ctrl-C cleans up too)
//	go run ./scripts/regtest -keep   # leave node, cfindexd and neutrino running until Ctrl-C or stop
//	go run ./scripts/regtest stop    # stop whatever a previous run left behind
//
// The node is bitcoind (-regtest -rest=1 -txindex=1, cookie auth) when a
// bitcoind is on PATH, otherwise btcd built from the version pinned in
// go.mod (internal/btcdtest); -node forces one. The bitcoind branch is not
// exercised by this repository's CI, which has only Go; everything after
// the node is started (mining, cfindexd, neutrino) is the same code for
// both and is tested with btcd by demo_test.go.
//
// Everything lives in one state directory (default
// $TMPDIR/cfindexd-regtest-demo): the cfindexd binary, the node's and
// cfindexd's data and logs, neutrino's database, and a pid file per
// process, which is how stop finds them. A successful run removes it; a
// failed run keeps it for its logs, and stop removes it.
//
// It must not touch anything outside its state directory, listen on
// anything but 127.0.0.1, or leave a process running after it returns
// (unless -keep, and then only until Ctrl-C or stop).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

// defaultStateDirName is the state directory below os.TempDir().
const defaultStateDirName = "cfindexd-regtest-demo"

// defaultStateDir is -state's default.
func defaultStateDir() string { return filepath.Join(os.TempDir(), defaultStateDirName) }

// stopCommand is the command that stops a demo whose state is in dir: with
// -state unless dir is the default.
func stopCommand(dir string) string {
	if dir == defaultStateDir() {
		return "go run ./scripts/regtest stop"
	}
	return "go run ./scripts/regtest -state " + shellQuote(dir) + " stop"
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and /._-+=:,@ (which need no quoting).
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code. Failures end
// in one line on stderr.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("regtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := demoConfig{Out: stdout}
	fs.StringVar(&cfg.StateDir, "state", defaultStateDir(), "state directory: binaries, data, logs and pid files")
	fs.StringVar(&cfg.Node, "node", nodeAuto, "node to run: auto (bitcoind if on PATH, else btcd), btcd or bitcoind")
	fs.IntVar(&cfg.Blocks, "blocks", defaultRichBlocks, "blocks with transactions to mine after coinbase maturity")
	fs.BoolVar(&cfg.Keep, "keep", false, "leave node, cfindexd and neutrino running after the report, until Ctrl-C or `stop`")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: go run ./scripts/regtest [-keep] [-node auto|btcd|bitcoind] [-blocks n] [-state dir]")
		fmt.Fprintln(stderr, "       go run ./scripts/regtest [-state dir] stop")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	switch fs.NArg() {
	case 0:
	case 1:
		if fs.Arg(0) != "stop" {
			fmt.Fprintf(stderr, "regtest: unknown command %q (want stop)\n", fs.Arg(0))
			return 2
		}
		if err := stopDemo(cfg.StateDir, stdout); err != nil {
			fmt.Fprintf(stderr, "regtest: stop: %v\n", err)
			return 1
		}
		return 0
	default:
		fmt.Fprintf(stderr, "regtest: too many arguments: %q\n", fs.Args())
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg.OwnPIDFile = true
	if _, err := runDemo(ctx, cfg); err != nil {
		fmt.Fprintf(stderr, "regtest: %v\n", err)
		return 1
	}
	return 0
}
