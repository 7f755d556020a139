package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/tcptest"
	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/silentpay"
	"github.com/cfindexd/cfindexd/store"
	"github.com/cfindexd/cfindexd/store/spindex"
)

// TestSilentPaymentBackfillKill9: a store built without the silent-payment
// index is restarted with `silentpayments` on and killed with SIGKILL
// three times while the index is built in the background, each after a
// random (fixed seed) number of its commits; every kill leaves an index
// that resumes where it was, whose stored values all check, and the run
// to the end leaves an index equal to one built from scratch from btcd's
// blocks. The metric and `cfindexd status` then report its height.
func TestSilentPaymentBackfillKill9(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(8*time.Minute))
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{TxIndex: true, WalletSeed: 53})
	if err := btcdtest.BuildTxRichChain(ctx, node, node.Wallet(), 900); err != nil {
		t.Fatal(err)
	}
	_, best, err := node.BestBlock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	datadir := t.TempDir()
	args := append(nodeArgs(node, "regtest", datadir), "--workers=1")
	d := startDaemon(t, args...)
	d.waitLog(3*time.Minute, heightAtLeast(float64(best)))
	if code, _ := d.terminate(10 * time.Second); code != 0 {
		t.Fatalf("run without the index: exit %d", code)
	}

	args = append(args, "--silentpayments=true")
	rng := rand.New(rand.NewPCG(53, 53))
	var resumed uint32 = 1
	for kill := 1; kill <= 3; kill++ {
		d := startDaemon(t, args...)
		// Kill after 1..3 commits of the backfill past where it resumed.
		commits := 1 + rng.IntN(3)
		d.waitLogN(2*time.Minute, commits, msgIs("committed silent-payment entries"))
		d.kill9()
		st := openStoreAfterExit(t, datadir, "regtest", node.Params())
		x := st.SilentPayments()
		s, _ := x.State()
		if s.Next < resumed+uint32(commits)*64 {
			t.Fatalf("kill %d: index next %d, below %d reached plus %d commits", kill, s.Next, resumed, commits)
		}
		if s.Next > uint32(best) {
			t.Fatalf("kill %d: the backfill finished before the kill; need a longer chain", kill)
		}
		if n, err := x.Scrub(s.Start, spindex.MaxRange); err != nil || n != s.Next {
			t.Fatalf("kill %d: scrub %d, %v, want %d", kill, n, err, s.Next)
		}
		resumed = s.Next
		st.Close()
		t.Logf("kill %d: silent-payment index next %d of tip %d", kill, resumed, best)
	}

	httpAddr := tcptest.FreeAddr(t)
	d = startDaemon(t, append(withoutFlag(args, "httplisten"), "--httplisten="+httpAddr)...)
	base := "http://" + httpAddr
	waitHTTP(t, base+"/metrics", 200, fmt.Sprintf("cfindexd_silentpay_indexed_height %d", best))
	code, out, errOut := runCLI(t, "status", "--chain=regtest", "--httplisten="+httpAddr)
	if want := fmt.Sprintf("silentpay height %d of indexed height %d", best, best); code != 0 || !strings.Contains(out, want) {
		t.Errorf("status: exit %d, want a line %q\n%s%s", code, want, out, errOut)
	}
	if code, _ := d.terminate(10 * time.Second); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
	st := openStoreAfterExit(t, datadir, "regtest", node.Params())
	checkSPFromScratch(ctx, t, node, st, uint32(best))
}

// checkSPFromScratch fails the test unless the store's silent-payment
// index covers 1..tip with exactly the entries package silentpay builds
// from btcd's blocks and spent scripts, the commitment chain included.
func checkSPFromScratch(ctx context.Context, t *testing.T, node *btcdtest.Node, st *store.Store, tip uint32) {
	t.Helper()
	x := st.SilentPayments()
	if s, _ := x.State(); s.Start != 1 || s.Next != tip+1 {
		t.Fatalf("index covers %d..%d, want 1..%d", s.Start, int64(s.Next)-1, tip)
	}
	var sb silentpay.BlockBuilder
	var prev chainhash.Hash
	for from := uint32(1); from <= tip; from += spindex.MaxRange {
		to := min(tip, from+spindex.MaxRange-1)
		hs, err := x.Headers(from, to)
		if err != nil {
			t.Fatal(err)
		}
		tds, err := x.TweakData(from, to)
		if err != nil {
			t.Fatal(err)
		}
		for i := range hs {
			h := from + uint32(i)
			hash, err := node.BlockHash(ctx, int32(h))
			if err != nil {
				t.Fatal(err)
			}
			blk, err := node.Block(ctx, hash)
			if err != nil {
				t.Fatal(err)
			}
			prevScripts, err := node.PrevOutScripts(ctx, blk)
			if err != nil {
				t.Fatal(err)
			}
			b, err := sb.BuildMsgBlock(blk, prevScripts)
			if err != nil {
				t.Fatal(err)
			}
			want := spindex.NewBlock(silentpay.AppendTweakData(nil, b.Tweaks), b.Filter, prev)
			f, err := x.FilterByHeight(h)
			if err != nil {
				t.Fatal(err)
			}
			if hs[i].BlockHash != hash || hs[i].Header != want.Header || !bytes.Equal(tds[i].TweakData, want.TweakData) || !bytes.Equal(f.Filter, want.Filter) {
				t.Fatalf("height %d: stored block %s header %s differs from the one built from scratch (%s %s)", h, hs[i].BlockHash, hs[i].Header, hash, want.Header)
			}
			prev = want.Header
		}
	}
}
