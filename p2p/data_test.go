package p2p

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/cfindexd/cfindexd/internal/testtx"
)

// fakeNode is a BlockFetcher and TxRelayer backed by maps.
type fakeNode struct {
	mu       sync.Mutex
	blocks   map[chainhash.Hash]*wire.MsgBlock
	fetches  int
	relayed  []*wire.MsgTx
	refuseTx error
}

func (n *fakeNode) FetchBlock(_ context.Context, hash chainhash.Hash) (*wire.MsgBlock, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.fetches++
	b, ok := n.blocks[hash]
	if !ok {
		return nil, fmt.Errorf("getblock %s: %w", hash, ErrNotFound)
	}
	return b, nil
}

func (n *fakeNode) RelayTransaction(_ context.Context, raw []byte) (chainhash.Hash, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.refuseTx != nil {
		return chainhash.Hash{}, n.refuseTx
	}
	tx := new(wire.MsgTx)
	if err := tx.Deserialize(bytes.NewReader(raw)); err != nil {
		return chainhash.Hash{}, fmt.Errorf("relayed transaction does not decode: %w", err)
	}
	n.relayed = append(n.relayed, tx)
	return tx.TxHash(), nil
}

// blockFor builds a block whose header is the fake block's header (so the
// hash matches) carrying a witness transaction.
func blockFor(b *fakeBlock) *wire.MsgBlock {
	blk := wire.NewMsgBlock(&b.header)
	_ = blk.AddTransaction(testtx.Witness(byte(b.height)))
	return blk
}

func TestGetDataServesBlocksAndNotFound(t *testing.T) {
	view := newFakeView(20, 11)
	node := &fakeNode{blocks: map[chainhash.Hash]*wire.MsgBlock{}}
	for h := uint32(0); h < 10; h++ { // the node lacks blocks 10..19 (pruned)
		node.blocks[view.at(h).hash] = blockFor(view.at(h))
	}
	cfg := testConfig(view)
	cfg.Blocks = node
	srv := startServer(t, cfg)
	c, _ := connect(t, srv.addr)

	gd := wire.NewMsgGetData()
	_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeWitnessBlock, &view.at(3).hash))
	_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeBlock, &view.at(4).hash))
	_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeWitnessBlock, &view.at(15).hash))     // node lacks it
	_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeWitnessBlock, &chainhash.Hash{0xee})) // unknown
	_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeTx, &chainhash.Hash{0xaa}))
	c.send(gd)
	got := c.sync()
	if len(got) != 3 {
		t.Fatalf("%d messages, want block, block, notfound", len(got))
	}
	b3 := got[0].(*wire.MsgBlock)
	if b3.BlockHash() != view.at(3).hash || !b3.Transactions[0].HasWitness() {
		t.Errorf("witness block: wrong block or witness stripped")
	}
	b4 := got[1].(*wire.MsgBlock)
	if b4.BlockHash() != view.at(4).hash || b4.Transactions[0].HasWitness() {
		t.Errorf("MSG_BLOCK: wrong block or witness kept")
	}
	nf := got[2].(*wire.MsgNotFound)
	if len(nf.InvList) != 3 || nf.InvList[0].Hash != view.at(15).hash || nf.InvList[1].Hash != (chainhash.Hash{0xee}) {
		t.Errorf("notfound %v", nf.InvList)
	}
	// The block cache serves repeats without asking the node again; the
	// unknown hash never reached the node.
	c.send(gd)
	c.sync()
	node.mu.Lock()
	fetches := node.fetches
	node.mu.Unlock()
	if fetches != 3+1 { // blocks 3, 4, 15, then 15 again (failures are not cached)
		t.Errorf("%d fetches from the node, want 4", fetches)
	}
}

func TestTxRelay(t *testing.T) {
	view := newFakeView(5, 12)
	node := &fakeNode{}
	cfg := testConfig(view)
	cfg.Relay, cfg.RelayTx = node, true
	srv := startServer(t, cfg)

	c, v := connect(t, srv.addr)
	if v.DisableRelayTx {
		t.Error("relay flag off with relay enabled")
	}
	tx := testtx.Witness(1)
	inv := wire.NewMsgInv()
	_ = inv.AddInvVect(wire.NewInvVect(wire.InvTypeTx, hashPtr(tx.TxHash())))
	c.send(inv)
	got := c.sync()
	if len(got) != 1 {
		t.Fatalf("got %d messages, want getdata", len(got))
	}
	if gd := got[0].(*wire.MsgGetData); gd.InvList[0].Hash != tx.TxHash() || gd.InvList[0].Type != wire.InvTypeWitnessTx {
		t.Fatalf("getdata %v", gd.InvList)
	}
	c.send(tx)
	c.sync()
	node.mu.Lock()
	if len(node.relayed) != 1 || node.relayed[0].TxHash() != tx.TxHash() {
		t.Fatalf("relayed %v", node.relayed)
	}
	node.refuseTx = errors.New("-26: min relay fee not met")
	node.mu.Unlock()

	// A refused transaction leaves the peer connected and unpunished.
	c.send(testtx.Witness(2))
	c.sync()
	if srv.Discouraged(netip.MustParseAddr("127.0.0.1")) || srv.PeerCount() != 1 {
		t.Fatal("peer punished for a transaction the node refused")
	}
}

func TestTxIgnoredWhenRelayDisabled(t *testing.T) {
	view := newFakeView(5, 13)
	node := &fakeNode{}
	cfg := testConfig(view)
	cfg.Relay = node // configured but not opted in
	srv := startServer(t, cfg)
	c, _ := connect(t, srv.addr)
	inv := wire.NewMsgInv()
	_ = inv.AddInvVect(wire.NewInvVect(wire.InvTypeTx, &chainhash.Hash{1}))
	c.send(inv)
	c.send(testtx.Witness(3))
	if got := c.sync(); len(got) != 0 {
		t.Fatalf("answers with relay disabled: %v", got)
	}
	if len(node.relayed) != 0 {
		t.Fatal("transaction relayed with relay disabled")
	}
}

// Once the upload target is reached, blocks more than a week older than
// the tip are refused and their requester disconnected (without penalty),
// recent blocks are still served, and whitelisted peers get everything.
func TestUploadTargetRefusesHistoricalBlocks(t *testing.T) {
	needLoopbackRange(t)
	view := newFakeView(1100, 25) // 600 s apart: heights below 91 are over a week older than the tip
	node := &fakeNode{blocks: map[chainhash.Hash]*wire.MsgBlock{}}
	for _, h := range []uint32{0, 50, 1090} {
		node.blocks[view.at(h).hash] = blockFor(view.at(h))
	}
	cfg := testConfig(view)
	cfg.Blocks = node
	cfg.MaxUploadTarget = 1 // reached by the first block served
	cfg.Whitelist = []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}
	m := newCountingMetrics()
	cfg.Metrics = m
	srv := startServer(t, cfg)
	getBlock := func(c *rawClient, h uint32) []wire.Message {
		gd := wire.NewMsgGetData()
		_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeWitnessBlock, &view.at(h).hash))
		c.send(gd)
		return c.sync()
	}

	c := connectFrom(t, srv.addr, "127.0.0.1")
	if got := getBlock(c, 50); len(got) != 1 {
		t.Fatalf("historical block before the target: %d messages", len(got))
	}
	if got := getBlock(c, 1090); len(got) != 1 {
		t.Fatalf("recent block after the target: %d messages", len(got))
	}
	trusted := connectFrom(t, srv.addr, "127.0.0.2")
	if got := getBlock(trusted, 0); len(got) != 1 {
		t.Fatalf("historical block to a whitelisted peer: %d messages", len(got))
	}
	gd := wire.NewMsgGetData()
	_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeWitnessBlock, &view.at(0).hash))
	c.send(gd)
	c.expectDisconnect()
	waitFor(t, "refusal counted", ioTimeout, func() bool {
		return m.count("upload_target") == 1 && m.disconnects("upload_target") == 1
	})
	if srv.Discouraged(netip.MustParseAddr("127.0.0.1")) {
		t.Fatal("discouraged for asking past the upload target")
	}
}
