package btcdtest

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestBuildTxRichChain1000 pins the speed requirement: 1,000 tx-rich blocks
// (5 transactions, 12 inputs each) well under a minute on 2 cores.
func TestBuildTxRichChain1000(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000-block chain")
	}
	t.Parallel()
	ctx := testCtx(t)
	n := Start(t, Options{})
	start := time.Now()
	if err := BuildTxRichChain(ctx, n, n.Wallet(), 1000); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("BuildTxRichChain(1000) took %v", took)
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n.PID())); err == nil {
		f := strings.Fields(string(stat))
		t.Logf("btcd utime %s stime %s ticks", f[13], f[14])
	}
	if _, tip, err := n.BestBlock(ctx); err != nil || tip != 1100 {
		t.Fatalf("tip height = %d (%v), want 1100", tip, err)
	}
}
