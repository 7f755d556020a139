package corefixture

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/lightninglabs/gozmq"
)

func TestLoadMatchesManifest(t *testing.T) {
	fx := Load(t)
	if got, want := len(fx.Blocks), 23; got != want { // h95–h115 + 2 stale
		t.Fatalf("blocks: got %d, want %d", got, want)
	}
	if fx.Tip.String() != "4474bc8d5b2033a2e5db6fcc8c018dea5faca38d99b0535a41560c3ec29e6452" {
		t.Fatalf("tip %s", fx.Tip)
	}
	for _, b := range fx.Blocks {
		if b.RESTBlock != nil && !bytes.Equal(b.RESTBlock, b.Raw) {
			t.Errorf("%s: REST block differs from getblock 0", b.Name())
		}
		if (b.RESTSpent == nil) != (b.Height < 101) {
			t.Errorf("%s: REST spenttxouts recorded=%v", b.Name(), b.RESTSpent != nil)
		}
	}
}

// Every outpoint spent by a recorded block resolves to a derived
// transaction whose hash is the outpoint's txid (LoadDir checks presence;
// this pins the hash check, which is what makes the rebuilt coinbases
// trustworthy).
func TestDerivedTransactionsHashToTheirTxid(t *testing.T) {
	fx := Load(t)
	n := 0
	for _, b := range fx.Blocks {
		blk, err := b.MsgBlock()
		if err != nil {
			t.Fatal(err)
		}
		for _, tx := range blk.Transactions[1:] {
			for _, in := range tx.TxIn {
				if _, ok := fx.RawTx(in.PreviousOutPoint.Hash); !ok {
					t.Fatalf("%s spends %s: not derived", b.Name(), in.PreviousOutPoint)
				}
				n++
			}
		}
	}
	if n == 0 {
		t.Fatal("no inputs checked")
	}
}

func TestPublisherSpeaksToGozmq(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pub := NewPublisher(t)
	conn, err := gozmq.Subscribe(pub.Endpoint(), []string{"hashblock"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := pub.WaitSubscribed(ctx, "hashblock", 1); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{7}, 1000) // long-form frame
	if n, err := pub.Publish([]byte("rawblock"), big, []byte{1, 0, 0, 0}); err != nil || n != 0 {
		t.Fatalf("unsubscribed topic delivered to %d (%v)", n, err)
	}
	if n, err := pub.Publish([]byte("hashblock"), big, []byte{1, 0, 0, 0}); err != nil || n != 1 {
		t.Fatalf("publish: %d, %v", n, err)
	}
	parts, err := conn.Receive(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 3 || string(parts[0]) != "hashblock" || !bytes.Equal(parts[1], big) {
		t.Fatalf("got %d parts, topic %q", len(parts), parts[0])
	}
}

func TestZMQCaptureIsContiguousPerTopic(t *testing.T) {
	msgs, err := Load(t).ZMQCapture()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	last := map[string]uint32{}
	for _, m := range msgs {
		if prev, ok := last[m.Topic]; ok && m.Seq != prev+1 {
			t.Errorf("%s: seq %d after %d", m.Topic, m.Seq, prev)
		}
		last[m.Topic] = m.Seq
		counts[m.Topic]++
	}
	if counts["hashblock"] != 16 || counts["sequence"] != 82 || counts["rawblock"] != 16 {
		t.Fatalf("counts %v", counts)
	}
}

// The derived blocks h0–h94 and the recorded ones form one linked chain
// whose every hash is the recorded active hash at that height.
func TestActiveChainIsComplete(t *testing.T) {
	fx := Load(t)
	chain := fx.ActiveChain()
	if len(chain) != 116 {
		t.Fatalf("active chain has %d blocks, want 116", len(chain))
	}
	for h, b := range chain {
		want, _ := fx.ActiveHash(int64(h))
		blk, err := b.MsgBlock()
		if err != nil {
			t.Fatal(err)
		}
		if b.Hash != want || blk.BlockHash() != want || int(b.Height) != h {
			t.Fatalf("height %d: %s (%s), want %s", h, b.Hash, b.Name(), want)
		}
		if h > 0 && blk.Header.PrevBlock != chain[h-1].Hash {
			t.Fatalf("height %d does not link to %d", h, h-1)
		}
		if b.Derived != (h < 95) {
			t.Fatalf("height %d: Derived=%v", h, b.Derived)
		}
	}
}
