package silentpay

import (
	"runtime"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// wideBlock returns a generated block with one more transaction of many
// inputs (with witnesses) and outputs, which grows a builder's scratch
// buffers past what a small block's transactions use, and its spent
// scripts.
func wideBlock(g *txGen) (*wire.MsgBlock, [][]byte) {
	msg, prev := g.block(5, chainhash.Hash{})
	wide := wire.NewMsgTx(2)
	for range 40 {
		tx, p := g.tx()
		for _, in := range tx.TxIn {
			wide.AddTxIn(in)
		}
		for _, out := range tx.TxOut {
			wide.AddTxOut(out)
		}
		prev = append(prev, p...)
	}
	_ = msg.AddTransaction(wide)
	return msg, prev
}

// builderHolds reports whether any slot of b's scratch buffers, over their
// whole capacity, still refers to bytes of a block or a spent script.
func builderHolds(b *BlockBuilder) bool {
	for _, in := range b.ins[:cap(b.ins)] {
		if in.SigScript != nil || in.Witness != nil || in.PrevScript != nil {
			return true
		}
	}
	for _, out := range b.outs[:cap(b.outs)] {
		if out.Script != nil {
			return true
		}
	}
	for _, item := range b.items[:cap(b.items)] {
		if item != nil {
			return true
		}
	}
	for _, key := range b.batch.keys[:cap(b.batch.keys)] {
		if key != nil {
			return true
		}
	}
	return false
}

// TestBuilderKeepsNothingOfTheBlockItRead: once Build or BuildMsgBlock
// returns (with a Block or an error), no slot of the builder's buffers
// (the tweak batch's taproot keys included) refers to the block or its
// spent scripts, the slots past a smaller block's transactions included;
// the buffers themselves are kept.
func TestBuilderKeepsNothingOfTheBlockItRead(t *testing.T) {
	g := newTxGen(7)
	wide, widePrev := wideBlock(g)
	small, smallPrev := g.block(1, chainhash.Hash{})
	var b BlockBuilder
	steps := []struct {
		name    string
		build   func() error
		wantErr bool
	}{
		{"Build, wide block", func() error { _, err := b.Build(serializeBlock(t, wide), widePrev); return err }, false},
		{"Build, small block after the wide one", func() error { _, err := b.Build(serializeBlock(t, small), smallPrev); return err }, false},
		{"BuildMsgBlock, wide block", func() error { _, err := b.BuildMsgBlock(wide, widePrev); return err }, false},
		{"BuildMsgBlock, small block", func() error { _, err := b.BuildMsgBlock(small, smallPrev); return err }, false},
		{"Build, wide block with a spent script missing", func() error {
			_, err := b.Build(serializeBlock(t, wide), widePrev[:len(widePrev)-1])
			return err
		}, true},
		{"Build, wide block cut short", func() error {
			raw := serializeBlock(t, wide)
			_, err := b.Build(raw[:len(raw)-10], widePrev)
			return err
		}, true},
	}
	for _, s := range steps {
		if err := s.build(); (err != nil) != s.wantErr {
			t.Fatalf("%s: error %v, want one: %v", s.name, err, s.wantErr)
		}
		if cap(b.ins) < 40 || cap(b.outs) < 40 || cap(b.items) < 40 || cap(b.batch.keys) == 0 {
			t.Fatalf("%s: buffers of %d inputs, %d outputs, %d witness items: not kept for the next block", s.name, cap(b.ins), cap(b.outs), cap(b.items))
		}
		if builderHolds(&b) {
			t.Fatalf("%s: the builder still refers to the block it read", s.name)
		}
	}
}

// TestIdleBuilderLetsItsBlocksBeCollected: a builder kept alive after
// reading a wide block and then a small one keeps neither raw block
// reachable (an indexer worker waiting for its next run keeps its builder,
// and raw blocks read over P2P are a megabyte each).
func TestIdleBuilderLetsItsBlocksBeCollected(t *testing.T) {
	g := newTxGen(8)
	wide, widePrev := wideBlock(g)
	small, smallPrev := g.block(1, chainhash.Hash{})
	var b BlockBuilder
	collected := make(chan string, 2)
	for _, blk := range []struct {
		name string
		msg  *wire.MsgBlock
		prev [][]byte
	}{{"wide", wide, widePrev}, {"small", small, smallPrev}} {
		ser := serializeBlock(t, blk.msg)
		raw := make([]byte, len(ser)) // an allocation of its own, as a P2P frame
		copy(raw, ser)
		runtime.AddCleanup(&raw[0], func(name string) { collected <- name }, blk.name)
		if _, err := b.Build(raw, blk.prev); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	seen := map[string]bool{}
	for len(seen) < 2 && time.Now().Before(deadline) {
		runtime.GC()
		select {
		case name := <-collected:
			seen[name] = true
		case <-time.After(20 * time.Millisecond):
		}
	}
	runtime.KeepAlive(&b)
	for _, name := range []string{"wide", "small"} {
		if !seen[name] {
			t.Errorf("the %s block is still reachable from the idle builder after 10 s of collections", name)
		}
	}
}
