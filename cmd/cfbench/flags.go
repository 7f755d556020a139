package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"
)

// commonFlags are the flags every subcommand has: the chain to build and
// how to run and report.
type commonFlags struct {
	// Blocks is the number of tx-rich blocks on top of the empty blocks
	// btcdtest mines first (maturity, segwit/taproot activation).
	Blocks int
	// WalletSeed selects the test wallet, hence the chain's transactions.
	WalletSeed int64
	// Out receives profiles and logs; empty means a new directory under
	// os.TempDir().
	Out string
	// CFIndexd is a prebuilt cfindexd binary; empty builds ./cmd/cfindexd.
	CFIndexd string
	// JSON prints the report as JSON instead of a table.
	JSON bool
	// Timeout bounds the whole run.
	Timeout time.Duration
	// Keep leaves the work directory (btcd's and cfindexd's data) behind.
	Keep bool
}

// common returns the common flags; every subcommand's configuration
// embeds them.
func (c commonFlags) common() commonFlags { return c }

// register adds the common flags to fs, with the subcommand's defaults
// for -blocks and -timeout.
func (c *commonFlags) register(fs *flag.FlagSet, blocks int, timeout time.Duration) {
	fs.IntVar(&c.Blocks, "blocks", blocks, "tx-rich blocks (btcd first mines ~300 empty blocks for maturity and segwit/taproot)")
	fs.Int64Var(&c.WalletSeed, "walletseed", 1, "wallet seed: fixes the chain's transactions")
	fs.StringVar(&c.Out, "out", "", "directory for profiles and logs (default: a new temporary directory)")
	fs.StringVar(&c.CFIndexd, "cfindexd", "", "prebuilt cfindexd binary (default: go build ./cmd/cfindexd)")
	fs.BoolVar(&c.JSON, "json", false, "print the report as JSON")
	fs.DurationVar(&c.Timeout, "timeout", timeout, "bound on the whole run")
	fs.BoolVar(&c.Keep, "keep", false, "keep the work directory (btcd and cfindexd data)")
}

// validate checks the common flags' ranges.
func (c commonFlags) validate() error {
	switch {
	case c.Blocks < 1 || c.Blocks > 100_000:
		return fmt.Errorf("%w: -blocks %d is outside 1..100000", errUsage, c.Blocks)
	case c.Timeout <= 0:
		return fmt.Errorf("%w: -timeout %s must be positive", errUsage, c.Timeout)
	}
	if c.CFIndexd != "" {
		if fi, err := os.Stat(c.CFIndexd); err != nil || fi.IsDir() {
			return fmt.Errorf("%w: -cfindexd %s is not a file", errUsage, c.CFIndexd)
		}
	}
	return nil
}

// parseFlagSet parses args into fs: -h is flag.ErrHelp, anything else
// wrong (a bad value, a positional argument) wraps errUsage.
func parseFlagSet(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	return nil
}
