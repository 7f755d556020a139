package zmq

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/internal/corefixture"
)

// startSubscriber runs a Subscriber for topics against pub until the
// test ends, and consumes the Resync hint every connection starts with.
func startSubscriber(t *testing.T, ctx context.Context, pub *corefixture.Publisher, topics ...string) *Subscriber {
	t.Helper()
	sub, err := NewSubscriber(Config{
		Endpoint: pub.Endpoint(), Topics: topics, ReadTimeout: 5 * time.Second,
		RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond,
		Rand: rand.New(rand.NewPCG(1, 2)),
	}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- sub.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
	if h := nextHint(t, ctx, sub.Hints()); !h.Resync {
		t.Fatalf("first hint after connect: %+v, want Resync", h)
	}
	for _, topic := range topics {
		if err := pub.WaitSubscribed(ctx, topic, 1); err != nil {
			t.Fatal(err)
		}
	}
	return sub
}

func nextHint(t *testing.T, ctx context.Context, ch <-chan Hint) Hint {
	t.Helper()
	select {
	case h := <-ch:
		return h
	case <-ctx.Done():
		t.Fatalf("no hint: %v", ctx.Err())
	}
	return Hint{}
}

func captured(t *testing.T, topic string) []corefixture.ZMQMessage {
	t.Helper()
	msgs, err := corefixture.Load(t).ZMQCapture()
	if err != nil {
		t.Fatal(err)
	}
	var out []corefixture.ZMQMessage
	for _, m := range msgs {
		if m.Topic == topic {
			out = append(out, m)
		}
	}
	return out
}

func hashOf(t *testing.T, display []byte) chainhash.Hash {
	t.Helper()
	return ReversedHash(display[:32])
}

// The captured hashblock and rawblock messages (h102–h115 incl. the stale
// branch and the reorg) are replayed with one deliberately skipped: every
// block comes through in order, and the one after the gap carries Resync.
func TestZMQBlockTopicsReplayWithGap(t *testing.T) {
	for _, topic := range []string{TopicHashBlock, TopicRawBlock} {
		t.Run(topic, func(t *testing.T) {
			ctx := testCtx(t)
			pub := corefixture.NewPublisher(t)
			sub := startSubscriber(t, ctx, pub, topic)
			msgs := captured(t, topic)
			blockHash := func(m corefixture.ZMQMessage) chainhash.Hash {
				if topic == TopicRawBlock {
					return chainhash.DoubleHashH(m.Body[:80])
				}
				return hashOf(t, m.Body)
			}
			const skip = 6
			for i, m := range msgs {
				if i == skip {
					continue
				}
				if _, err := pub.Publish(m.Frames()...); err != nil {
					t.Fatal(err)
				}
			}
			for i, m := range msgs {
				if i == skip {
					continue
				}
				h := nextHint(t, ctx, sub.Hints())
				if want := blockHash(m); h.Hash != want {
					t.Fatalf("hint %d: hash %s, want %s", i, h.Hash, want)
				}
				if h.Resync != (i == skip+1) {
					t.Fatalf("hint %d (seq %d): Resync=%v", i, m.Seq, h.Resync)
				}
			}
			// The last captured block is the recorded tip.
			if got := blockHash(msgs[len(msgs)-1]); got != corefixture.Load(t).Tip {
				t.Fatalf("last %s %s is not the tip", topic, got)
			}
		})
	}
}

// The sequence topic: C gives a hint, D (block disconnected by
// invalidateblock) a Resync hint, mempool A/R messages none — unless one of
// them follows a gap, which turns into a bare Resync hint.
func TestZMQSequenceTopic(t *testing.T) {
	ctx := testCtx(t)
	pub := corefixture.NewPublisher(t)
	sub := startSubscriber(t, ctx, pub, TopicSequence)
	msgs := captured(t, TopicSequence)
	skip := -1
	for i, m := range msgs {
		if m.Body[32] == 'A' && i > 10 {
			skip = i // drop a mempool message: the gap still matters
			break
		}
	}
	var want []Hint
	gap := false
	for i, m := range msgs {
		if i == skip {
			gap = true
			continue
		}
		if _, err := pub.Publish(m.Frames()...); err != nil {
			t.Fatal(err)
		}
		switch m.Body[32] {
		case 'C':
			want = append(want, Hint{Hash: hashOf(t, m.Body), Resync: gap})
			gap = false
		case 'D':
			want = append(want, Hint{Hash: hashOf(t, m.Body), Resync: true})
			gap = false
		default:
			if gap {
				want = append(want, Hint{Resync: true})
				gap = false
			}
		}
	}
	disconnects := 0
	for i, w := range want {
		h := nextHint(t, ctx, sub.Hints())
		if h != w {
			t.Fatalf("hint %d: got %+v, want %+v", i, h, w)
		}
		if w.Resync && w.Hash != (chainhash.Hash{}) {
			disconnects++
		}
	}
	if disconnects != 2 {
		t.Fatalf("%d disconnect hints, want 2 (invalidateblock of h114, h113)", disconnects)
	}
}

// After the publisher drops the connection the subscriber comes back by
// itself and flags the first hint after the outage as Resync.
func TestZMQReconnect(t *testing.T) {
	ctx := testCtx(t)
	pub := corefixture.NewPublisher(t)
	sub := startSubscriber(t, ctx, pub, TopicHashBlock)
	msgs := captured(t, TopicHashBlock)
	if _, err := pub.Publish(msgs[0].Frames()...); err != nil {
		t.Fatal(err)
	}
	if h := nextHint(t, ctx, sub.Hints()); h.Resync || h.Hash != hashOf(t, msgs[0].Body) {
		t.Fatalf("before outage: %+v", h)
	}
	pub.DisconnectAll()
	if err := pub.WaitSubscribed(ctx, TopicHashBlock, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := pub.Publish(msgs[1].Frames()...); err != nil {
		t.Fatal(err)
	}
	// Whichever path noticed the outage (gozmq's own reconnect or ours),
	// a Resync hint arrives before or with the next block.
	sawResync := false
	for {
		h := nextHint(t, ctx, sub.Hints())
		sawResync = sawResync || h.Resync
		if h.Hash == hashOf(t, msgs[1].Body) {
			break
		}
	}
	if !sawResync {
		t.Fatal("no Resync after reconnect")
	}
}

func TestZMQConfigValidation(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Endpoint: "ipc:///tmp/x"},
		{Endpoint: "tcp://127.0.0.1:1", Topics: []string{"hashtx"}},
	} {
		if _, err := NewSubscriber(cfg, testLogger(t)); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}
