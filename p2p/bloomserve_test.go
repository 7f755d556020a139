package p2p

import (
	"bytes"
	"context"
	"net/netip"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/bloom"
)

// With BIP-37 serving on, a wallet's filterload and filteradd give
// filtered blocks byte-identical to bloom.FilterBlock run on a model of the
// same filter, block after block (so BLOOM_UPDATE_ALL's outpoints carry
// over), each proving its transactions against the header; a filter change
// mid-way applies to the next block; the block was fetched from the node
// once however many peers asked.
func TestFilteredBlocksFromTheWire(t *testing.T) {
	c := newBloomChain(t, 30, 12, 1)
	srv := startServer(t, c.bloomConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 2*ioTimeout)
	defer cancel()

	for _, mode := range []wire.BloomUpdateType{wire.BloomUpdateNone, wire.BloomUpdateAll, wire.BloomUpdateP2PubkeyOnly} {
		p := dialBloom(t, srv.addr, false)
		if p.Version().Services&wire.SFNodeBloom == 0 {
			t.Fatal("NODE_BLOOM not offered")
		}
		model := walletFilter(t, mode, c.keys[2][1], c.keys[5][3], c.keys[9][0], c.keys[20][4])
		if err := p.LoadFilter(ctx, model); err != nil {
			t.Fatal(err)
		}
		compared, matched := 0, 0
		for from := 0; from < len(c.blocks); from += 10 {
			if from == 10 { // a filteradd between requests
				e := c.keys[15][2]
				if err := p.Send(ctx, wire.NewMsgFilterAdd(e)); err != nil {
					t.Fatal(err)
				}
				if err := model.FilterAdd(e); err != nil {
					t.Fatal(err)
				}
			}
			hashes := c.hashes(from, from+9)
			got, err := p.GetFilteredBlocks(ctx, hashes, false)
			if err != nil {
				t.Fatalf("mode %d blocks %d..: %v", mode, from, err)
			}
			for i, fb := range got {
				want := bloom.FilterBlock(c.blocks[from+i], nil, model)
				if !bytes.Equal(fb.RawMerkleBlock, want.MerkleBlock.Bytes()) || len(fb.RawTxs) != len(want.Txs) {
					t.Fatalf("mode %d block %d: merkleblock or tx count differs from the model (%d txs, want %d)", mode, from+i, len(fb.RawTxs), len(want.Txs))
				}
				for k, raw := range fb.RawTxs {
					if !bytes.Equal(raw, encodeTx(t, want.Txs[k], false)) {
						t.Fatalf("mode %d block %d tx %d differs (sent with witness?)", mode, from+i, k)
					}
				}
				if _, err := fb.Verify(hashes[i]); err != nil {
					t.Fatalf("block %d: %v", from+i, err)
				}
				compared++
				matched += len(fb.Txs)
			}
		}
		if matched < 5 {
			t.Fatalf("mode %d: only %d transactions matched: the test proves little", mode, matched)
		}
		t.Logf("mode %d: %d filtered blocks equal the model, %d transactions matched", mode, compared, matched)
	}
	c.node.mu.Lock()
	fetches := c.node.fetches
	c.node.mu.Unlock()
	if fetches != len(c.blocks) {
		t.Errorf("%d node fetches for %d blocks asked by 3 peers: decoded blocks are not shared", fetches, len(c.blocks))
	}
	_ = srv
}

// What a peer gets for requests that have no filtered answer, as Core:
// nothing for MSG_FILTERED_BLOCK without a filter loaded, nothing for
// MSG_FILTERED_WITNESS_BLOCK ever, a notfound for a block this server does
// not know.
func TestFilteredBlockNonAnswers(t *testing.T) {
	c := newBloomChain(t, 5, 3, 2)
	srv := startServer(t, c.bloomConfig())
	cl, _ := connect(t, srv.addr)
	gd := wire.NewMsgGetData()
	_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeFilteredBlock, hashPtr(c.blocks[1].BlockHash())))
	cl.send(gd)
	if got := cl.sync(); len(got) != 0 {
		t.Fatalf("no filter loaded: %d answers, want none", len(got))
	}
	cl.send(walletFilter(t, wire.BloomUpdateAll, c.keys[1][0]).MsgFilterLoad())
	gd = wire.NewMsgGetData()
	_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeFilteredWitnessBlock, hashPtr(c.blocks[1].BlockHash())))
	_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeFilteredBlock, &chainhash.Hash{0xee}))
	_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeFilteredBlock, hashPtr(c.blocks[1].BlockHash())))
	cl.send(gd)
	got := cl.sync()
	if len(got) != 3 {
		t.Fatalf("%d answers, want merkleblock, tx, notfound", len(got))
	}
	if mb, ok := got[0].(*wire.MsgMerkleBlock); !ok || mb.Header.BlockHash() != c.blocks[1].BlockHash() {
		t.Fatalf("first answer %T, want the merkleblock of block 1", got[0])
	}
	if tx, ok := got[1].(*wire.MsgTx); !ok || tx.TxHash() != c.blocks[1].Transactions[0].TxHash() {
		t.Fatalf("second answer %T, want the matched coinbase", got[1])
	}
	if nf, ok := got[2].(*wire.MsgNotFound); !ok || len(nf.InvList) != 1 || nf.InvList[0].Hash != (chainhash.Hash{0xee}) {
		t.Fatalf("third answer %v, want notfound of the unknown block", got[2])
	}
}

// BIP-37 off (the default): Core's reaction to a node without NODE_BLOOM.
// filterload, filteradd, filterclear and mempool disconnect without
// penalty, except mempool from a whitelisted peer (Core's noban), which is
// ignored; NODE_BLOOM is not offered; MSG_FILTERED_BLOCK and getblocks get
// no answer.
func TestBloomOffKeepsCoresReaction(t *testing.T) {
	c := newBloomChain(t, 5, 2, 3)
	for _, tc := range []struct {
		name string
		msg  wire.Message
	}{
		{"filterload", walletFilter(t, wire.BloomUpdateAll, c.keys[1][0]).MsgFilterLoad()},
		{"filteradd", wire.NewMsgFilterAdd([]byte{1, 2, 3})},
		{"filterclear", wire.NewMsgFilterClear()},
		{"mempool", wire.NewMsgMemPool()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(c.view)
			cfg.Blocks = c.node
			m := newCountingMetrics()
			cfg.Metrics = m
			srv := startServer(t, cfg)
			cl, v := connect(t, srv.addr)
			if v.Services&wire.SFNodeBloom != 0 {
				t.Fatal("NODE_BLOOM offered with serving off")
			}
			cl.send(tc.msg)
			cl.expectDisconnect()
			waitFor(t, "disconnect counted", ioTimeout, func() bool { return m.disconnects("invalid_request") == 1 })
			if srv.Discouraged(netip.MustParseAddr("127.0.0.1")) {
				t.Fatal("discouraged")
			}
		})
	}
	cfg := testConfig(c.view)
	cfg.Blocks = c.node
	cfg.Whitelist = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	srv := startServer(t, cfg)
	cl, _ := connect(t, srv.addr)
	cl.send(wire.NewMsgMemPool())
	gd := wire.NewMsgGetData()
	_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeFilteredBlock, hashPtr(c.blocks[1].BlockHash())))
	cl.send(gd)
	gb := wire.NewMsgGetBlocks(&chainhash.Hash{})
	_ = gb.AddBlockLocatorHash(hashPtr(c.blocks[0].BlockHash()))
	cl.send(gb)
	if got := cl.sync(); len(got) != 0 {
		t.Fatalf("whitelisted peer: %d answers to mempool, a filtered block and getblocks, want none", len(got))
	}
}
