package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/cfindexd/cfindexd/netparams"
	"github.com/cfindexd/cfindexd/store"
	"github.com/cfindexd/cfindexd/storecheck"
)

// maxScrubInterval bounds scrubinterval.
const maxScrubInterval = time.Hour

// validateScrub checks the scrubinterval key.
func (c *Config) validateScrub() error {
	if c.ScrubInterval < 0 || c.ScrubInterval > maxScrubInterval {
		return fmt.Errorf("scrubinterval: %s is outside 0s..%s", c.ScrubInterval, maxScrubInterval)
	}
	return nil
}

// runVerify is `cfindexd verify`: it checks the whole store of the
// configured chain offline (the daemon must be stopped), the active chain
// and the stale set, prints every damaged value and a summary, and returns 0 when there is none, 1 when
// there are some and 2 when the store cannot be checked.
func runVerify(args, environ []string, stdout, stderr io.Writer) int {
	cfg, err := loadConfig(args, environ, stdout)
	if code, done := configDone("cfindexd verify", err, stdout, stderr); done {
		return code
	}
	nw, err := netparams.Lookup(cfg.Chain)
	if err != nil {
		fmt.Fprintf(stderr, "cfindexd verify: %v\n", err)
		return 2
	}
	path := filepath.Join(cfg.DataDir, nw.Name, storeFileName)
	if _, err := os.Stat(path); err != nil {
		fmt.Fprintf(stderr, "cfindexd verify: no store to check: %v\n", err)
		return 2
	}
	st, err := store.Open(path, *nw.Params.GenesisHash, store.Options{Timeout: time.Second})
	if errors.Is(err, store.ErrLocked) {
		fmt.Fprintf(stderr, "cfindexd verify: %v (stop the daemon first)\n", err)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "cfindexd verify: %v\n", err)
		return 2
	}
	defer st.Close()
	faults := 0
	report := func(f storecheck.Fault) {
		faults++
		fmt.Fprintf(stdout, "fault: %s\n", f)
	}
	var heights uint32
	for from := uint32(0); ; {
		last, atTip, err := storecheck.CheckRange(st, from, from+1999, report)
		if err != nil {
			fmt.Fprintf(stderr, "cfindexd verify: %v\n", err)
			return 2
		}
		if tip, ok := st.Tip(); ok {
			heights = tip.Height + 1
		}
		if atTip {
			break
		}
		from = last + 1
	}
	stale, err := storecheck.CheckStale(st, report)
	if err != nil {
		fmt.Fprintf(stderr, "cfindexd verify: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "checked %s: %d heights, %d stale blocks: %d faults\n", path, heights, stale, faults)
	if faults > 0 {
		fmt.Fprintln(stdout, "the daemon repairs damaged heights of the active chain from the node when it meets them (not stale blocks); --reindex rebuilds the whole store")
		return 1
	}
	return 0
}
