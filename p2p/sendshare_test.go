package p2p

import (
	"bufio"
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// A peer whose queue is empty pipelines more than one chunk of a
// getcfilters answer, from its reserve, while 100 peers that do not read
// hold the whole shared send pool and wait for more; and its answer
// arrives whole once it reads.
func TestReservePipelinesWhileOthersHoldThePool(t *testing.T) {
	const filterSize = 23_000 // mainnet-size
	view := newFakeViewFilters(1100, 5, filterSize)
	cfg := testConfig(view)
	cfg.MaxPeers = DefaultMaxPeers
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	// serve starts a peer on a synchronous pipe (nothing buffered in the
	// kernel) answering req, and returns the pipe's far end.
	serve := func(req wire.Message) (*peer, net.Conn) {
		ours, theirs := net.Pipe()
		t.Cleanup(func() { ours.Close(); theirs.Close() })
		p := pipePeer(t, s, ours)
		wg.Go(func() { _ = p.writeLoop(ctx) })
		wg.Go(func() { _ = dispatch(ctx, s.env, p.st, req, p.emit(ctx)) })
		return p, theirs
	}
	for range 100 {
		serve(wire.NewMsgGetCFilters(wire.GCSFilterRegular, 0, hashPtr(view.at(999).hash)))
	}
	shared := s.sendPool.Shared()
	waitFor(t, "the shared pool held, peers waiting for more", ioTimeout, func() bool {
		return shared.Used()+maxQueueEntry > shared.Limit() && shared.Waiting() > 0
	})

	light, theirs := serve(wire.NewMsgGetCFilters(wire.GCSFilterRegular, 100, hashPtr(view.at(199).hash)))
	waitFor(t, "more than one chunk in flight", ioTimeout, func() bool { return light.budget.Queued() >= 2*chunkCap })
	if shared.Waiting() == 0 {
		t.Fatal("the greedy peers stopped waiting for the shared pool")
	}

	rd := bufio.NewReader(theirs)
	for h := uint32(100); h < 200; h++ {
		_ = theirs.SetReadDeadline(time.Now().Add(ioTimeout))
		_, m, _, err := wire.ReadMessageWithEncodingN(rd, wire.ProtocolVersion, chaincfg.RegressionNetParams.Net, wire.WitnessEncoding)
		if err != nil {
			t.Fatalf("filter %d: %v", h, err)
		}
		if cf, ok := m.(*wire.MsgCFilter); !ok || cf.BlockHash != view.at(h).hash {
			t.Fatalf("message for height %d is %s", h, m.Command())
		}
	}
}
