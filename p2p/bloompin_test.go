package p2p

import (
	"bufio"
	"bytes"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/bloom"
)

// A BIP-37 peer that does not read holds no decoded block: the matched
// transactions of its filtered block are encoded a batch at a time with
// the block pinned, and the pin is released before the frames wait for the
// peer's send budget. So peers that ask for different blocks and never
// read cannot fill the decoded-block cache. Once the peer reads, the whole
// answer (merkleblock, then every matched transaction, several batches)
// arrives as the model has it.
func TestNonReadingBloomPeerHoldsNoPin(t *testing.T) {
	c := newBloomChain(t, 3, 1500, 9)
	cfg := c.bloomConfig()
	cfg.PeerSendBudget = 16 << 10
	s, p, theirs, ctx := writingPipePeer(t, cfg)
	model := walletFilter(t, wire.BloomUpdateNone, c.keys[1]...)
	emit := p.emit(ctx)
	if err := dispatch(ctx, s.env, p.st, model.MsgFilterLoad(), emit); err != nil {
		t.Fatal(err)
	}
	block := c.blocks[1]
	want := bloom.FilterBlock(block, nil, model.Clone())
	wantBytes := 0
	for _, tx := range want.Txs {
		wantBytes += tx.SerializeSizeStripped()
	}
	if wantBytes < 3*peerWriteBuffer {
		t.Fatalf("matched transactions of %d bytes: too few to outlast the writer's buffer", wantBytes)
	}
	done := make(chan error, 1)
	go func() {
		gd := wire.NewMsgGetData()
		h := block.BlockHash()
		_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeFilteredBlock, &h))
		done <- dispatch(ctx, s.env, p.st, gd, emit)
	}()
	waitFor(t, "the answer queued and no pin held", ioTimeout, func() bool {
		return p.budget.Queued() > 0 && s.env.decoded.Pinned() == 0
	})

	rd := bufio.NewReader(theirs)
	read := func() wire.Message {
		t.Helper()
		_ = theirs.SetReadDeadline(time.Now().Add(ioTimeout))
		_, m, _, err := wire.ReadMessageWithEncodingN(rd, wire.ProtocolVersion, chaincfg.RegressionNetParams.Net, wire.BaseEncoding)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	mb, ok := read().(*wire.MsgMerkleBlock)
	if !ok || mb.Header.BlockHash() != block.BlockHash() {
		t.Fatal("the answer does not start with the block's merkleblock")
	}
	for i, tx := range want.Txs {
		got, ok := read().(*wire.MsgTx)
		if !ok || got.TxHash() != tx.TxHash() {
			t.Fatalf("matched transaction %d of %d: not the model's", i, len(want.Txs))
		}
		var a, b bytes.Buffer
		_ = got.SerializeNoWitness(&a)
		_ = tx.SerializeNoWitness(&b)
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("matched transaction %d differs", i)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := s.env.decoded.Pinned(); n != 0 {
		t.Fatalf("%d pins held after the answer", n)
	}
	t.Logf("%d matched transactions (%d bytes) served with no pin held while the peer did not read", len(want.Txs), wantBytes)
}
