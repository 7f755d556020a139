package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/internal/testtime"
)

// waitSPTip waits until every daemon's /sp/checkpoints names btcd's tip.
func waitSPTip(ctx context.Context, t *testing.T, c *spChain, daemons ...spDaemon) (chainhash.Hash, int32) {
	t.Helper()
	best, height, err := c.node.BestBlock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(testtime.Scale(90 * time.Second))
	for _, d := range daemons {
		for {
			var cps struct {
				Height    int32  `json:"height"`
				BlockHash string `json:"block_hash"`
			}
			body, code := httpGet(t, d.http+"/sp/checkpoints")
			if code == http.StatusOK && json.Unmarshal(body, &cps) == nil && cps.Height == height && cps.BlockHash == best.String() {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				t.Fatalf("cfindexd %s did not follow btcd to %d %s: last /sp/checkpoints %d %s", d.http, height, best, code, body)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return best, height
}

// TestSPScanAcrossReorg is issue 19's "cfscan finds exactly the payments
// made to its keys, across a reorg that removes and re-adds one" on btcd
// with two cfindexd. After a first scan finds every payment,
// invalidateblock removes the block holding the change-label payment and
// a heavier replacement branch without it is mined: once both daemons
// are at btcd's tip, cfscan finds the other payments only. Then
// reconsiderblock and two more blocks on the old branch make it the
// heavier again: the payment is back at its height, and the scan finds
// exactly the original set. Every scan recomputes both daemons' commitment
// chains and cross-checks them over the whole range, and their
// /sp/headers files are byte for byte equal.
func TestSPScanAcrossReorg(t *testing.T) {
	if testing.Short() {
		t.Skip("starts btcd and two cfindexd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(4*time.Minute))
	defer cancel()
	c := buildSPChain(ctx, t)
	a, b := startSPDaemon(ctx, t, c.node, c.tip), startSPDaemon(ctx, t, c.node, c.tip)
	keyArgs := []string{"--scan-key=" + hex.EncodeToString(c.wallet.scan.Serialize()),
		"--spend-pub=" + hex.EncodeToString(c.wallet.spend.PubKey().SerializeCompressed()), "--label=7",
		"--server=" + a.http, "--server=" + b.http, "--peer=" + a.p2p, "--chain=regtest"}

	// The change-label payment is alone in its block, the second send.
	var moved int32
	for _, w := range c.want {
		if w.Label == "change" {
			moved = int32(w.Height)
		}
	}
	if moved == 0 {
		t.Fatal("the test chain has no change-label payment")
	}
	var kept []spFound
	keptTweaks := 0
	for _, w := range c.want {
		if int32(w.Height) < moved {
			kept = append(kept, w)
		}
	}
	for _, tx := range c.txs {
		if tx.height < moved {
			keptTweaks++
		}
	}
	if len(kept) == 0 || len(kept) == len(c.want) {
		t.Fatalf("payments %+v: none would remain or none would go", c.want)
	}

	scan := func(step string, want []spFound, tip int32, tweaks int) {
		t.Helper()
		rep, code, _, stderr := runSPScan(ctx, t, keyArgs...)
		if rep == nil {
			t.Fatalf("%s: cfscan sp: exit %d: %s", step, code, stderr)
		}
		checkSPFound(t, rep, want)
		if rep.From != 1 || rep.To != uint32(tip) || rep.HeadersVerified != 2*int(tip) || rep.CrossChecked != int(tip) || rep.Tweaks != tweaks {
			t.Fatalf("%s: report %+v; want 1..%d, %d tweaks, both chains verified and cross-checked", step, rep, tip, tweaks)
		}
		ha, codeA := httpGet(t, a.http+"/sp/headers/0")
		hb, codeB := httpGet(t, b.http+"/sp/headers/0")
		if codeA != http.StatusOK || codeB != http.StatusOK || !bytes.Equal(ha, hb) {
			t.Fatalf("%s: /sp/headers/0 differ between the daemons (status %d, %d; %d and %d bytes)", step, codeA, codeB, len(ha), len(hb))
		}
	}
	_, tip := waitSPTip(ctx, t, c, a, b)
	scan("before the reorg", c.want, tip, len(c.txs))

	// invalidateblock, then a replacement branch one block longer than the
	// old one, with empty blocks: the payment leaves the chain.
	oldTip, _, err := c.node.BestBlock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	payBlock, err := c.node.BlockHash(ctx, moved)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.node.InvalidateBlock(ctx, payBlock); err != nil {
		t.Fatal(err)
	}
	parent, err := c.node.BlockHash(ctx, moved-1)
	if err != nil {
		t.Fatal(err)
	}
	replacement := (&spCoin{key: spTestKey("replacement miner")}).script()
	for h := moved; h <= c.tip+1; h++ {
		blk, err := c.node.MineOn(ctx, parent, nil, replacement)
		if err != nil {
			t.Fatal(err)
		}
		parent = blk.BlockHash()
	}
	best, tip := waitSPTip(ctx, t, c, a, b)
	if best != parent || tip != c.tip+1 {
		t.Fatalf("btcd tip %d %s, want the replacement %d %s", tip, best, c.tip+1, parent)
	}
	scan("after the reorg removed the payment", kept, tip, keptTweaks)

	// reconsiderblock, and the old branch grows past the replacement: the
	// payment comes back in the same block at the same height.
	if err := c.node.ReconsiderBlock(ctx, payBlock); err != nil {
		t.Fatal(err)
	}
	parent = oldTip
	for range 2 {
		blk, err := c.node.MineOn(ctx, parent, nil, replacement)
		if err != nil {
			t.Fatal(err)
		}
		parent = blk.BlockHash()
	}
	best, tip = waitSPTip(ctx, t, c, a, b)
	if best != parent || tip != c.tip+2 {
		t.Fatalf("btcd tip %d %s, want the old branch grown to %d %s", tip, best, c.tip+2, parent)
	}
	if again, err := c.node.BlockHash(ctx, moved); err != nil || again != payBlock {
		t.Fatalf("block at %d: %s (%v), want the payment block %s back", moved, again, err, payBlock)
	}
	scan("after the payment came back", c.want, tip, len(c.txs))
}
