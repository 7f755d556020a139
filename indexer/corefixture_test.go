package indexer

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/internal/corefixture"
	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/nodeclient"
	"github.com/cfindexd/cfindexd/prevouts"
	"github.com/cfindexd/cfindexd/zmq"
)

// recordedFilter is Core's getblockfilter answer for one block.
type recordedFilter struct {
	Filter string `json:"filter"`
	Header string `json:"header"`
}

func (r recordedFilter) decode(t *testing.T) ([]byte, chainhash.Hash) {
	t.Helper()
	f, err := hex.DecodeString(r.Filter)
	if err != nil {
		t.Fatal(err)
	}
	h, err := chainhash.NewHashFromStr(r.Header)
	if err != nil {
		t.Fatal(err)
	}
	return f, *h
}

// TestFollowerOnRecordedCoreChain indexes the chain recorded from Bitcoin
// Core v31, from genesis, through each prevout path (REST spenttxouts,
// getblock 3, getrawtransaction), woken only by the recorded ZMQ hashblock
// messages (one deliberately dropped, so the subscriber sees a sequence gap)
// and through the recorded reorg. Every block's filter and filter header,
// the two stale blocks included, must equal Core's getblockfilter.
func TestFollowerOnRecordedCoreChain(t *testing.T) {
	fx := corefixture.Load(t)
	capture, err := fx.ZMQCapture()
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[chainhash.Hash]recordedFilter{}
	for _, b := range append(append([]*corefixture.Block(nil), fx.Early...), fx.Blocks...) {
		var want recordedFilter
		if err := json.Unmarshal(b.FilterJSON, &want); err != nil {
			t.Fatalf("h%d getblockfilter: %v", b.Height, err)
		}
		recorded[b.Hash] = want
	}
	h101, ok := fx.ActiveHash(101)
	if !ok {
		t.Fatal("no h101 in the recording")
	}

	for _, mode := range []string{prevouts.ModeREST, prevouts.ModeGetBlock3, prevouts.ModeTxIndex} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(3*time.Minute))
			defer cancel()
			srv := corefixture.NewServer(t, fx, corefixture.Options{})
			client, err := nodeclient.NewClient(nodeclient.Config{Host: srv.Host(), CookieFile: srv.CookieFile()}, testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			if mode == prevouts.ModeREST {
				detected, err := prevouts.DetectSource(ctx, client, testLogger(t))
				if err != nil {
					t.Fatal(err)
				}
				if detected.Mode() != prevouts.ModeREST {
					t.Fatalf("Core v31 with -rest=1: detected %s", detected.Mode())
				}
			}
			source, err := prevouts.NewSource(client, mode, prevouts.SourceOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.SetActiveTip(h101); err != nil {
				t.Fatal(err)
			}
			st := openStore(t, fx.Genesis)

			pub := corefixture.NewPublisher(t)
			sub, err := zmq.NewSubscriber(zmq.Config{Endpoint: pub.Endpoint()}, testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			wake := make(chan struct{}, 1)
			var resyncs atomic.Int32
			go func() { _ = sub.Run(ctx) }()
			go func() {
				for {
					select {
					case <-ctx.Done():
						return
					case h := <-sub.Hints():
						if h.Resync {
							resyncs.Add(1)
						}
						select {
						case wake <- struct{}{}:
						default:
						}
					}
				}
			}()
			if err := pub.WaitSubscribed(ctx, "hashblock", 1); err != nil {
				t.Fatal(err)
			}

			// Poll once an hour: only ZMQ (and the first round) move it.
			// Core made the recorded stale blocks with invalidateblock and
			// mined a branch of the same length, which the follower takes
			// only after the settle time: keep that short.
			f := NewFollower(Config{Genesis: fx.Genesis, Workers: 3, PollInterval: time.Hour, ReorgSettle: 50 * time.Millisecond}, client, source, st, wake, nil, testLogger(t))
			done := make(chan error, 1)
			runCtx, stop := context.WithCancel(ctx)
			go func() { done <- f.Run(runCtx) }()
			waitTip(t, st, h101, 30*time.Second)
			resyncsBefore := resyncs.Load() // the first connect counts as one

			dropped, published := false, 0
			for _, m := range capture {
				if m.Topic != "hashblock" {
					continue
				}
				hash, err := chainhash.NewHash(reverse(m.Body))
				if err != nil {
					t.Fatal(err)
				}
				// The node moves first; the notification follows.
				if err := srv.SetActiveTip(*hash); err != nil {
					t.Fatal(err)
				}
				if blk, _ := fx.BlockByHash(*hash); !dropped && blk.Height == 105 {
					dropped = true // the subscriber never sees this one
					continue
				}
				if n, err := pub.Publish(m.Frames()...); err != nil || n != 1 {
					t.Fatalf("publish: %d subscribers, %v", n, err)
				}
				published++
				waitTip(t, st, *hash, 30*time.Second)
			}
			stop()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if published != 15 || !dropped {
				t.Fatalf("published %d hashblock messages (dropped one: %v), want 15 of the 16 recorded (h102..h115 and the 2 stale blocks)", published, dropped)
			}
			if resyncs.Load() == resyncsBefore {
				t.Error("the dropped hashblock message did not produce a resync hint")
			}

			// Every recorded block, genesis to tip and the two stale
			// blocks, equals Core's getblockfilter.
			stale := 0
			for hash, want := range recorded {
				rec, active, err := st.FilterByHash(hash)
				if err != nil {
					t.Fatalf("%s was never indexed: %v", hash, err)
				}
				if !active {
					stale++
				}
				wantFilter, wantHeader := want.decode(t)
				if string(rec.Filter) != string(wantFilter) || rec.FilterHeader != wantHeader {
					t.Errorf("h%d %s: filter %x header %s; Core %x %s", rec.Height, hash, rec.Filter, rec.FilterHeader, wantFilter, wantHeader)
				}
			}
			if len(recorded) != 116+2 || stale != 2 {
				t.Errorf("checked %d recorded blocks (%d stale), want 118 (2 stale)", len(recorded), stale)
			}
			if tip, _ := st.Tip(); tip.Hash != fx.Tip {
				t.Errorf("final tip %s, recorded tip %s", tip.Hash, fx.Tip)
			}
		})
	}
}

// reverse returns b reversed (ZMQ hashblock bodies are in display order).
func reverse(b []byte) []byte {
	out := make([]byte, len(b))
	for i := range b {
		out[len(b)-1-i] = b[i]
	}
	return out
}
