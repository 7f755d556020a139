package p2p

import (
	"bufio"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/wireframe"
)

// getcfilters reads filters from the store as they are sent: to a peer
// that reads nothing, only what fits its send budget (plus the writer's
// buffer and one chunk) is ever read; once the peer reads, the whole answer
// arrives, in order.
func TestGetCFiltersStreamsFromTheStore(t *testing.T) {
	const filterSize = 25_000 // mainnet-size
	view := newFakeViewFilters(1100, 81, filterSize)
	cfg := testConfig(view)
	cfg.PeerSendBudget = 64 << 10
	s, p, theirs, ctx := writingPipePeer(t, cfg)

	done := make(chan error, 1)
	go func() {
		req := wire.NewMsgGetCFilters(wire.GCSFilterRegular, 100, hashPtr(view.at(1099).hash))
		done <- dispatch(ctx, s.env, p.st, req, p.emit(ctx))
	}()
	frame := int64(wireframe.HeaderSize + 1 + 32 + 3 + filterSize)
	waitFor(t, "send budget full", ioTimeout, func() bool { return p.budget.Queued()+frame > int64(cfg.PeerSendBudget) })
	time.Sleep(50 * time.Millisecond) // would a read-ahead go on, it would show now
	bound := (int64(cfg.PeerSendBudget)+peerWriteBuffer+chunkCap)/frame + 2
	if read := view.filtersRead.Load(); read > bound {
		t.Fatalf("%d filters read for a peer that reads nothing, bound %d", read, bound)
	}

	// The peer reads: all 1,000 arrive in order.
	rd := bufio.NewReader(theirs)
	for h := uint32(100); h < 1100; h++ {
		_ = theirs.SetReadDeadline(time.Now().Add(ioTimeout))
		_, m, _, err := wire.ReadMessageWithEncodingN(rd, wire.ProtocolVersion, chaincfg.RegressionNetParams.Net, wire.WitnessEncoding)
		if err != nil {
			t.Fatalf("filter %d: %v", h, err)
		}
		cf, ok := m.(*wire.MsgCFilter)
		if !ok || cf.BlockHash != view.at(h).hash || len(cf.Data) != filterSize {
			t.Fatalf("message for height %d is %s", h, m.Command())
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if read := view.filtersRead.Load(); read != 1000 {
		t.Fatalf("%d filters read for a 1,000-filter answer", read)
	}
}
