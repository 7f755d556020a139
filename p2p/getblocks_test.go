package p2p

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// getblocks as Core answers it (bitcoinj downloads filtered blocks this
// way): up to 500 block hashes after the locator's fork point, stopping
// before the hash stop; when cut at 500, a getdata of the last one brings
// an inv of the tip, the cue for the next getblocks; more than 101 locator
// hashes disconnect without penalty.
func TestGetBlocks(t *testing.T) {
	view := newFakeView(1200, 9)
	cfg := testConfig(view)
	cfg.Blocks = &fakeNode{blocks: map[chainhash.Hash]*wire.MsgBlock{}}
	cfg.Bloom.Enabled = true
	srv := startServer(t, cfg)
	c, _ := connect(t, srv.addr)

	gb := wire.NewMsgGetBlocks(&chainhash.Hash{})
	_ = gb.AddBlockLocatorHash(&view.at(100).hash)
	_ = gb.AddBlockLocatorHash(&view.at(0).hash)
	c.send(gb)
	got := c.sync()
	if len(got) != 1 {
		t.Fatalf("%d answers, want one inv", len(got))
	}
	inv := got[0].(*wire.MsgInv)
	if len(inv.InvList) != 500 || inv.InvList[0].Hash != view.at(101).hash || inv.InvList[499].Hash != view.at(600).hash {
		t.Fatalf("inv of %d blocks from %v, want 101..600", len(inv.InvList), inv.InvList[0].Hash)
	}
	for _, iv := range inv.InvList {
		if iv.Type != wire.InvTypeBlock {
			t.Fatalf("inv type %v", iv.Type)
		}
	}

	// The continuation: asking for block 600 (filtered, no filter loaded:
	// no answer of its own) brings the tip's inv.
	gd := wire.NewMsgGetData()
	_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeFilteredBlock, &view.at(600).hash))
	c.send(gd)
	got = c.sync()
	if len(got) != 1 {
		t.Fatalf("%d answers to the continuation block, want the tip's inv", len(got))
	}
	if tipInv := got[0].(*wire.MsgInv); len(tipInv.InvList) != 1 || tipInv.InvList[0].Hash != view.at(1199).hash {
		t.Fatalf("continuation inv %v, want the tip", tipInv.InvList)
	}
	c.send(gd) // once only
	if got := c.sync(); len(got) != 0 {
		t.Fatalf("continuation sent twice")
	}

	// Hash stop: blocks before it, not it.
	gb = wire.NewMsgGetBlocks(&view.at(1105).hash)
	_ = gb.AddBlockLocatorHash(&view.at(1100).hash)
	c.send(gb)
	got = c.sync()
	if inv := got[0].(*wire.MsgInv); len(inv.InvList) != 4 || inv.InvList[3].Hash != view.at(1104).hash {
		t.Fatalf("getblocks 1101..stop 1105: %d hashes", len(inv.InvList))
	}
	// At the tip: nothing to say.
	gb = wire.NewMsgGetBlocks(&chainhash.Hash{})
	_ = gb.AddBlockLocatorHash(&view.at(1199).hash)
	c.send(gb)
	if got := c.sync(); len(got) != 0 {
		t.Fatalf("getblocks from the tip: %d answers", len(got))
	}

	gb = wire.NewMsgGetBlocks(&chainhash.Hash{})
	for i := range 102 {
		_ = gb.AddBlockLocatorHash(&view.at(uint32(i)).hash)
	}
	c.send(gb)
	c.expectDisconnect()
	if srv.Discouraged(netip.MustParseAddr("127.0.0.1")) {
		t.Fatal("discouraged for a long locator")
	}
}

// Once the upload target is reached, the filtered blocks of recent blocks
// are still served (unlike Core, which refuses every filtered block then),
// and a filtered block of a historical block (more than a week older than
// the tip) disconnects the peer, unless it is whitelisted.
func TestFilteredBlockUploadTarget(t *testing.T) {
	c := newBloomChainSpaced(t, 4, 2, 10, 4*24*time.Hour) // blocks 0 and 1 historical, 2 and 3 recent
	filtered := func(h int) *wire.MsgGetData {
		gd := wire.NewMsgGetData()
		_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeFilteredBlock, hashPtr(c.blocks[h].BlockHash())))
		return gd
	}
	for _, whitelisted := range []bool{false, true} {
		cfg := c.bloomConfig()
		cfg.MaxUploadTarget = 1
		m := newCountingMetrics()
		cfg.Metrics = m
		if whitelisted {
			cfg.Whitelist = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		}
		srv := startServer(t, cfg)
		srv.env.upload.Add(0, 10, time.Now())
		cl, _ := connect(t, srv.addr)
		cl.send(walletFilter(t, wire.BloomUpdateAll, c.keys[0][0], c.keys[2][0], c.keys[3][0]).MsgFilterLoad())
		for _, h := range []int{3, 2} {
			cl.send(filtered(h))
			if got := cl.sync(); len(got) != 2 {
				t.Fatalf("whitelisted %v: recent block %d: %d answers past the target, want merkleblock and tx", whitelisted, h, len(got))
			}
		}
		cl.send(filtered(0))
		if whitelisted {
			if got := cl.sync(); len(got) != 2 {
				t.Fatalf("whitelisted: historical block: %d answers, want merkleblock and tx", len(got))
			}
			continue
		}
		cl.expectDisconnect()
		waitFor(t, "upload_target disconnect", ioTimeout, func() bool {
			return m.disconnects("upload_target") == 1 && m.count("upload_target:target") == 1
		})
	}
}

// A merkleblock over maxMerkleBlockPayload (a filter matching thousands of
// one block's transactions) is refused: disconnect without penalty.
func TestOversizedMerkleBlockRefused(t *testing.T) {
	c := newBloomChain(t, 1, 9000, 11)
	cfg := c.bloomConfig()
	cfg.Bloom.MaxFPR = 1
	m := newCountingMetrics()
	cfg.Metrics = m
	srv := startServer(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	p := dialBloom(t, srv.addr, false)
	if err := p.Send(ctx, wire.NewMsgFilterLoad(nil, 0, 0, 0)); err != nil { // matches everything
		t.Fatal(err)
	}
	if _, err := p.GetFilteredBlocks(ctx, c.hashes(0, 0), false); err == nil {
		t.Fatal("a merkleblock proving 9,001 transactions was served")
	}
	waitFor(t, "invalid_request disconnect", ioTimeout, func() bool { return m.disconnects("invalid_request") == 1 })
	if srv.Discouraged(netip.MustParseAddr("127.0.0.1")) {
		t.Fatal("discouraged")
	}
}
