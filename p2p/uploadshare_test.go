package p2p

import (
	"net/netip"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
	"github.com/cfindexd/cfindexd/wireframe"
)

// One network group that was served its share of the upload target has
// its historical blocks refused (and is disconnected for asking), while
// its recent blocks are still served and another group's historical
// downloads go on: a flood from one /16 uses up its own share, not the
// target.
func TestUploadTargetGroupShare(t *testing.T) {
	needLoopbackRange(t)
	view := newFakeView(1100, 26) // 600 s apart: heights below 91 are over a week older than the tip
	node := &fakeNode{blocks: map[chainhash.Hash]*wire.MsgBlock{}}
	for _, h := range []uint32{0, 10, 50, 1090} {
		node.blocks[view.at(h).hash] = blockFor(view.at(h))
	}
	// A share is two blocks with their frame headers (all are the same
	// size); the target is eight shares.
	block := int64(wireframe.HeaderSize + node.blocks[view.at(50).hash].SerializeSize())
	for _, b := range node.blocks {
		if n := int64(wireframe.HeaderSize + b.SerializeSize()); n != block {
			t.Fatalf("blocks of %d and %d bytes", n, block)
		}
	}
	cfg := testConfig(view)
	cfg.Blocks = node
	cfg.MaxUploadTarget = peerpolicy.UploadGroupShare * 2 * block
	m := newCountingMetrics()
	cfg.Metrics = m
	srv := startServer(t, cfg)
	getBlock := func(c *rawClient, h uint32) []wire.Message {
		gd := wire.NewMsgGetData()
		_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeWitnessBlock, &view.at(h).hash))
		c.send(gd)
		return c.sync()
	}

	flood := connectFrom(t, srv.addr, "127.1.0.1")
	for _, h := range []uint32{50, 10} {
		if got := getBlock(flood, h); len(got) != 1 {
			t.Fatalf("historical block %d within the group's share: %d messages", h, len(got))
		}
	}
	if got := getBlock(flood, 1090); len(got) != 1 {
		t.Fatalf("recent block past the group's share: %d messages", len(got))
	}
	neighbour := connectFrom(t, srv.addr, "127.1.200.7") // same /16
	other := connectFrom(t, srv.addr, "127.2.0.1")
	if got := getBlock(other, 50); len(got) != 1 {
		t.Fatalf("another group's historical block: %d messages", len(got))
	}
	if got := getBlock(other, 0); len(got) != 1 {
		t.Fatalf("another group's second historical block: %d messages", len(got))
	}
	for _, c := range []*rawClient{flood, neighbour} {
		gd := wire.NewMsgGetData()
		_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeWitnessBlock, &view.at(0).hash))
		c.send(gd)
		c.expectDisconnect()
	}
	waitFor(t, "refusals counted", ioTimeout, func() bool {
		return m.count("upload_target:group_share") == 2 && m.disconnects("upload_target") == 2
	})
	if n := m.count("upload_target:target"); n != 0 {
		t.Fatalf("%d refusals for the whole target, which was not reached", n)
	}
	if srv.Discouraged(netip.MustParseAddr("127.1.0.1")) {
		t.Fatal("discouraged for asking past the group's share")
	}
}
