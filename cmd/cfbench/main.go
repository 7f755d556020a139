package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/pubbench"
	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/replbench"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// subcommand is one benchmark: it parses its own flags and runs.
type subcommand struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// subcommands lists the benchmarks by name.
func subcommands() map[string]subcommand {
	return map[string]subcommand{
		"sync":    {summary: "catch-up speed, CPU and RSS of cfindexd vs btcd building its own cfindex", run: runSync},
		"serve":   {summary: "getcfilters/getcfheaders throughput and latency under many peers, cfindexd vs btcd", run: runServe},
		"bip37":   {summary: "BIP-157 throughput beside BIP-37 wallets vs alone, and cfindexd's RSS", run: runBIP37},
		"hostile": {summary: "attacks on cfindexd, one class at a time: its peak RSS, a well-behaved client's latency and refusals", run: runHostile},
		"publish": {summary: "publish throughput into a local MinIO on the mainnet-shaped chain, against cfindexd's catch-up", run: pubbench.Run},
		"replica": {summary: "a read replica's bootstrap from its primary's HTTP and time to the tip on the mainnet-shaped chain, against the primary's catch-up", run: replbench.Run},
	}
}

// run is main without the process: it returns the exit code (2 for usage
// errors, 1 for a failed benchmark).
func run(args []string, stdout, stderr io.Writer) int {
	cmds := subcommands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "cfbench: unknown subcommand %q\n", args[0])
		usage(stderr, cmds)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := cmd.run(ctx, args[1:], stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "cfbench %s: %v\n", args[0], err)
		return 2
	default:
		fmt.Fprintf(stderr, "cfbench %s: %v\n", args[0], err)
		return 1
	}
}

// errUsage marks bad flags or arguments.
var errUsage = errors.New("usage")

// usage lists the subcommands.
func usage(w io.Writer, cmds map[string]subcommand) {
	fmt.Fprintln(w, "Usage: cfbench <subcommand> [flags]")
	fmt.Fprintln(w)
	for _, name := range []string{"sync", "serve", "bip37", "hostile", "publish"} {
		fmt.Fprintf(w, "  %-7s %s\n", name, cmds[name].summary)
	}
}
