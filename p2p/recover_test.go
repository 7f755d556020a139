package p2p

import (
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// panicView is a ChainView that panics in HeightOf (handlers) or Tip (the
// ticker's announcements) while the matching switch is on.
type panicView struct {
	*fakeView
	inHandler, inTicker atomic.Bool
}

func (v *panicView) HeightOf(h chainhash.Hash) (uint32, bool, error) {
	if v.inHandler.Load() {
		panic("view failure in a handler")
	}
	return v.fakeView.HeightOf(h)
}

func (v *panicView) Tip() (Tip, bool) {
	if v.inTicker.Load() {
		panic("view failure in the ticker")
	}
	return v.fakeView.Tip()
}

// A panic in a peer's handler or ticker is recovered: counted, the peer
// disconnected without penalty, and the server keeps serving everybody
// else.
func TestPanicInPeerGoroutineIsRecovered(t *testing.T) {
	view := &panicView{fakeView: newFakeView(50, 71)}
	cfg := testConfig(view.fakeView)
	cfg.View = view
	m := newCountingMetrics()
	cfg.Metrics = m
	srv := startServer(t, cfg)
	req := wire.NewMsgGetCFilters(wire.GCSFilterRegular, 40, hashPtr(view.at(49).hash))

	// Handler (reader goroutine).
	victim, _ := connect(t, srv.addr)
	bystander, _ := connect(t, srv.addr)
	view.inHandler.Store(true)
	victim.send(req)
	victim.expectDisconnect()
	waitFor(t, "panic counted", ioTimeout, func() bool { return m.count("panic") == 1 && m.disconnects("panic") == 1 })
	view.inHandler.Store(false)
	bystander.send(req)
	if got := bystander.sync(); len(got) != 10 {
		t.Fatalf("bystander got %d filters after another peer's panic, want 10", len(got))
	}

	// Ticker: the next tip announcement panics, for every peer.
	view.inTicker.Store(true)
	view.extend(1)
	bystander.expectDisconnect()
	waitFor(t, "ticker panic counted", ioTimeout, func() bool { return m.count("panic") == 2 })
	view.inTicker.Store(false)

	if srv.Discouraged(netip.MustParseAddr("127.0.0.1")) {
		t.Fatal("a peer was discouraged for the server's own panic")
	}
	fresh, _ := connect(t, srv.addr)
	fresh.send(req)
	if got := fresh.sync(); len(got) != 10 {
		t.Fatalf("fresh peer got %d filters after the panics, want 10", len(got))
	}
}
