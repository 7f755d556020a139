package btcdtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/testtime"
)

// TestBuildTxRichChain1000 pins the speed requirement: 1,000 tx-rich blocks
// (5 transactions and 11 inputs each, after 100 maturity blocks) in well
// under a minute on 2 cores. The minute is stretched on a loaded machine
// (testtime.Scale), where the build competes for the cores.
func TestBuildTxRichChain1000(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000-block chain")
	}
	if raceEnabled {
		t.Skip("timing requirement; the race detector slows signing several-fold")
	}
	t.Parallel()
	const budget = 60 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(budget))
	defer cancel()
	n := Start(t, Options{})
	start := time.Now()
	if err := BuildTxRichChain(ctx, n, n.Wallet(), 1000); err != nil {
		t.Fatalf("BuildTxRichChain(1000) within %v: %v", testtime.Scale(budget), err)
	}
	t.Logf("BuildTxRichChain(1000) took %v", time.Since(start))
	// Where the time went: btcd's own CPU time (Linux only).
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n.PID())); err == nil {
		if f := strings.Fields(string(stat)); len(f) > 14 {
			t.Logf("btcd CPU: utime %s stime %s clock ticks", f[13], f[14])
		}
	}
	if _, tip, err := n.BestBlock(ctx); err != nil || tip != 1100 {
		t.Fatalf("tip height = %d (%v), want 1100", tip, err)
	}
}
