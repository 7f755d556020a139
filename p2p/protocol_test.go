package p2p

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

func TestHandshakeAdvertisesFilterServices(t *testing.T) {
	view := newFakeView(120, 1)
	// NODE_P2P_V2 only while v2 is on (the default).
	off := testConfig(view)
	off.DisableV2 = true
	_, v1only := connect(t, startServer(t, off).addr)
	if want := wire.SFNodeNetwork | wire.SFNodeWitness | wire.SFNodeCF; v1only.Services != want {
		t.Errorf("v2 off: services %v, want %v", v1only.Services, want)
	}
	srv := startServer(t, testConfig(view))
	c, v := connect(t, srv.addr, wire.NewMsgSendAddrV2(), wire.NewMsgWTxIdRelay(), wire.NewMsgSendHeaders())
	want := wire.SFNodeNetwork | wire.SFNodeWitness | wire.SFNodeCF | wire.SFNodeP2PV2
	if v.Services != want {
		t.Errorf("services %v, want %v", v.Services, want)
	}
	if v.ProtocolVersion != 70016 {
		t.Errorf("protocol version %d, want 70016", v.ProtocolVersion)
	}
	if v.LastBlock != 119 {
		t.Errorf("start height %d, want indexed tip 119", v.LastBlock)
	}
	if !v.DisableRelayTx {
		t.Errorf("relay flag set with transaction relay disabled")
	}
	// getaddr gets no answer; feefilter is accepted.
	c.send(wire.NewMsgGetAddr())
	c.send(wire.NewMsgFeeFilter(1000))
	if got := c.sync(); len(got) != 0 {
		t.Errorf("answers to getaddr/feefilter: %v", got)
	}
	waitFor(t, "peer count 1", ioTimeout, func() bool { return srv.PeerCount() == 1 })
}

func TestHandshakeRequiresVersionFirst(t *testing.T) {
	srv := startServer(t, testConfig(newFakeView(5, 1)))
	c := dial(t, srv.addr)
	c.send(wire.NewMsgPing(1))
	c.expectDisconnect()
	if srv.Discouraged(netip.MustParseAddr("127.0.0.1")) {
		t.Errorf("a peer that skipped version was discouraged; it should only be disconnected")
	}
}

// wantFilters checks cfilter messages against view blocks.
func wantFilters(t *testing.T, got []wire.Message, want []*fakeBlock) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d messages, want %d cfilters", len(got), len(want))
	}
	for i, m := range got {
		cf, ok := m.(*wire.MsgCFilter)
		if !ok {
			t.Fatalf("message %d is %s, want cfilter", i, m.Command())
		}
		if cf.BlockHash != want[i].hash || !bytes.Equal(cf.Data, want[i].filter) || cf.FilterType != wire.GCSFilterRegular {
			t.Fatalf("cfilter %d is for %s, want block %d %s", i, cf.BlockHash, want[i].height, want[i].hash)
		}
	}
}

func TestGetCFiltersServesRangeUpToLimit(t *testing.T) {
	view := newFakeView(1500, 2)
	srv := startServer(t, testConfig(view))
	c, _ := connect(t, srv.addr)
	tests := []struct {
		name        string
		start, stop uint32
	}{
		{"single block", 7, 7},
		{"genesis", 0, 0},
		{"exactly 1000", 100, 1099},
		{"up to tip", 1490, 1499},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.send(wire.NewMsgGetCFilters(wire.GCSFilterRegular, tc.start, hashPtr(view.at(tc.stop).hash)))
			var want []*fakeBlock
			for h := tc.start; h <= tc.stop; h++ {
				want = append(want, view.at(h))
			}
			wantFilters(t, c.sync(), want)
		})
	}
}

func TestStaleBranchStopHashIsServed(t *testing.T) {
	view := newFakeView(2600, 3)
	// A stale branch forking off height 1500, 700 blocks long (to 2200).
	stale := view.makeBranch(view.at(1500), 700)
	view.addStale(stale...)
	srv := startServer(t, testConfig(view))
	c, _ := connect(t, srv.addr)

	stop := stale[len(stale)-1] // height 2200
	c.send(wire.NewMsgGetCFilters(wire.GCSFilterRegular, 1400, hashPtr(stale[99].hash)))
	var want []*fakeBlock
	for h := uint32(1400); h <= 1500; h++ {
		want = append(want, view.at(h))
	}
	wantFilters(t, c.sync(), append(want, stale[:100]...))

	c.send(wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 1501, hashPtr(stop.hash)))
	got := c.sync()
	cfh := got[0].(*wire.MsgCFHeaders)
	checkCFHeaders(t, cfh, view.at(1500).filterHeader, stale)

	c.send(wire.NewMsgGetCFCheckpt(wire.GCSFilterRegular, &stop.hash))
	cp := c.sync()[0].(*wire.MsgCFCheckpt)
	wantCP := []chainhash.Hash{view.at(1000).filterHeader, stale[499].filterHeader} // heights 1000, 2000
	if stale[499].height != 2000 {
		t.Fatalf("test setup: stale[499] at height %d", stale[499].height)
	}
	checkCheckpoints(t, cp, wantCP)
}

func checkCFHeaders(t *testing.T, m *wire.MsgCFHeaders, prev chainhash.Hash, blocks []*fakeBlock) {
	t.Helper()
	if m.PrevFilterHeader != prev {
		t.Fatalf("prev filter header %s, want %s", m.PrevFilterHeader, prev)
	}
	if len(m.FilterHashes) != len(blocks) {
		t.Fatalf("%d filter hashes, want %d", len(m.FilterHashes), len(blocks))
	}
	// Chaining the hashes from prev must reproduce every filter header.
	h := prev
	for i, fh := range m.FilterHashes {
		h = chainhash.DoubleHashH(append(fh[:], h[:]...))
		if h != blocks[i].filterHeader {
			t.Fatalf("filter header %d (height %d) does not chain", i, blocks[i].height)
		}
	}
}

func checkCheckpoints(t *testing.T, m *wire.MsgCFCheckpt, want []chainhash.Hash) {
	t.Helper()
	if len(m.FilterHeaders) != len(want) {
		t.Fatalf("%d checkpoints, want %d", len(m.FilterHeaders), len(want))
	}
	for i := range want {
		if *m.FilterHeaders[i] != want[i] {
			t.Fatalf("checkpoint %d is %s, want %s", i, m.FilterHeaders[i], want[i])
		}
	}
}

func TestGetCFHeadersAndCheckpointsOnActiveChain(t *testing.T) {
	view := newFakeView(3500, 4)
	srv := startServer(t, testConfig(view))
	c, _ := connect(t, srv.addr)

	for _, r := range []struct{ start, stop uint32 }{{0, 1999}, {1, 1}, {1000, 2999}, {3000, 3499}} {
		c.send(wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, r.start, hashPtr(view.at(r.stop).hash)))
		m := c.sync()[0].(*wire.MsgCFHeaders)
		var prev chainhash.Hash
		if r.start > 0 {
			prev = view.at(r.start - 1).filterHeader
		}
		var blocks []*fakeBlock
		for h := r.start; h <= r.stop; h++ {
			blocks = append(blocks, view.at(h))
		}
		checkCFHeaders(t, m, prev, blocks)
		if m.StopHash != view.at(r.stop).hash {
			t.Errorf("stop hash %s", m.StopHash)
		}
	}
	for _, stop := range []uint32{999, 1000, 3499} {
		c.send(wire.NewMsgGetCFCheckpt(wire.GCSFilterRegular, hashPtr(view.at(stop).hash)))
		var want []chainhash.Hash
		for h := uint32(1000); h <= stop; h += 1000 {
			want = append(want, view.at(h).filterHeader)
		}
		checkCheckpoints(t, c.sync()[0].(*wire.MsgCFCheckpt), want)
	}
}

// Invalid requests disconnect without penalty, as in Core: the same
// address is admitted again at once and answered.
func TestInvalidRequestsDisconnectWithoutPenalty(t *testing.T) {
	view := newFakeView(2500, 5)
	hash := func(h uint32) *chainhash.Hash { return hashPtr(view.at(h).hash) }
	tests := []struct {
		name string
		msg  wire.Message
	}{
		{"getcfilters 1001 blocks", wire.NewMsgGetCFilters(wire.GCSFilterRegular, 0, hash(1000))},
		{"getcfilters start above stop", wire.NewMsgGetCFilters(wire.GCSFilterRegular, 11, hash(10))},
		{"getcfilters unknown type", wire.NewMsgGetCFilters(1, 0, hash(10))},
		{"getcfheaders 2001 blocks", wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 0, hash(2000))},
		{"getcfheaders start above stop", wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 2001, hash(2000))},
		{"getcfheaders unknown type", wire.NewMsgGetCFHeaders(255, 0, hash(10))},
		{"getcfcheckpt unknown type", wire.NewMsgGetCFCheckpt(1, hash(2000))},
		{"getheaders with 102 locator hashes", func() wire.Message {
			m := wire.NewMsgGetHeaders()
			for i := 0; i < 102; i++ {
				_ = m.AddBlockLocatorHash(hash(uint32(i)))
			}
			return m
		}()},
		{"filterload", wire.NewMsgFilterLoad(make([]byte, 10), 1, 0, wire.BloomUpdateNone)},
		{"mempool", wire.NewMsgMemPool()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(view)
			m := newCountingMetrics()
			cfg.Metrics = m
			srv := startServer(t, cfg)
			c, _ := connect(t, srv.addr)
			c.send(tc.msg)
			c.expectDisconnect()
			waitFor(t, "disconnect counted", ioTimeout, func() bool { return m.disconnects("invalid_request") == 1 })
			if srv.Discouraged(netip.MustParseAddr("127.0.0.1")) {
				t.Fatal("address discouraged for an invalid request")
			}
			c2, _ := connect(t, srv.addr)
			c2.send(wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 0, hash(10)))
			if got := c2.sync(); len(got) != 1 {
				t.Fatalf("fresh connection from the same address: %d answers", len(got))
			}
		})
	}
}

func TestUnknownStopHashIsIgnoredAfterWait(t *testing.T) {
	view := newFakeView(50, 6)
	cfg := testConfig(view)
	cfg.StopHashWait = 200e6 // 200 ms keeps the test short
	srv := startServer(t, cfg)
	c, _ := connect(t, srv.addr)
	unknown := chainhash.Hash{1, 2, 3}
	c.send(wire.NewMsgGetCFilters(wire.GCSFilterRegular, 0, &unknown))
	c.send(wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 0, &unknown))
	c.send(wire.NewMsgGetCFCheckpt(wire.GCSFilterRegular, &unknown))
	if got := c.sync(); len(got) != 0 {
		t.Fatalf("answers for an unknown stop hash: %d messages", len(got))
	}
	if srv.Discouraged(netip.MustParseAddr("127.0.0.1")) {
		t.Fatal("discouraged for an unknown stop hash")
	}
}

func TestStopHashCommittedDuringWaitIsAnswered(t *testing.T) {
	view := newFakeView(50, 7)
	view.misses = make(chan chainhash.Hash, 16)
	srv := startServer(t, testConfig(view))
	c, _ := connect(t, srv.addr)

	next := view.makeBranch(view.tipBlock(), 1)[0] // height 50, not committed
	c.send(wire.NewMsgGetCFilters(wire.GCSFilterRegular, 45, &next.hash))
	// The server looked the hash up and did not find it: it is waiting.
	select {
	case h := <-view.misses:
		if h != next.hash {
			t.Fatalf("miss for %s", h)
		}
	case <-timeAfter(ioTimeout):
		t.Fatal("server never looked the stop hash up")
	}
	view.commit(next)
	var want []*fakeBlock
	for h := uint32(45); h <= 50; h++ {
		want = append(want, view.at(h))
	}
	// The commit also announces the new tip; only the filters matter here.
	var got []wire.Message
	for _, m := range c.sync() {
		if _, inv := m.(*wire.MsgInv); !inv {
			got = append(got, m)
		}
	}
	wantFilters(t, got, want)
}

func TestGetHeadersFollowsLocator(t *testing.T) {
	view := newFakeView(2600, 8)
	stale := view.makeBranch(view.at(100), 5)
	view.addStale(stale...)
	srv := startServer(t, testConfig(view))
	c, _ := connect(t, srv.addr)
	hash := func(h uint32) *chainhash.Hash { return hashPtr(view.at(h).hash) }

	tests := []struct {
		name       string
		locator    []*chainhash.Hash
		stop       *chainhash.Hash
		first, cnt uint32
	}{
		{"from height 100 to tip limit", []*chainhash.Hash{hash(100), hash(99), hash(0)}, &chainhash.Hash{}, 101, 2000},
		{"stale locator entry skipped", []*chainhash.Hash{&stale[4].hash, hash(50)}, &chainhash.Hash{}, 51, 2000},
		{"unknown locator: from genesis", []*chainhash.Hash{{9, 9}}, &chainhash.Hash{}, 1, 2000},
		{"ends at hash stop", []*chainhash.Hash{hash(10)}, hash(15), 11, 5},
		{"hash stop at the limit", []*chainhash.Hash{hash(10)}, hash(2010), 11, 2000},
		{"hash stop past the limit ignored", []*chainhash.Hash{hash(10)}, hash(2011), 11, 2000},
		{"hash stop below the fork ignored", []*chainhash.Hash{hash(10)}, hash(5), 11, 2000},
		{"hash stop at the fork ignored", []*chainhash.Hash{hash(10)}, hash(10), 11, 2000},
		{"stale hash stop ignored", []*chainhash.Hash{hash(10)}, &stale[4].hash, 11, 2000},
		{"near tip", []*chainhash.Hash{hash(2590)}, &chainhash.Hash{}, 2591, 9},
		{"at tip: empty", []*chainhash.Hash{hash(2599)}, &chainhash.Hash{}, 0, 0},
		{"empty locator: hash stop only", nil, hash(77), 77, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := wire.NewMsgGetHeaders()
			m.BlockLocatorHashes = tc.locator
			m.HashStop = *tc.stop
			c.send(m)
			got := c.sync()
			if len(got) != 1 {
				t.Fatalf("%d messages, want one headers", len(got))
			}
			hs := got[0].(*wire.MsgHeaders).Headers
			if uint32(len(hs)) != tc.cnt {
				t.Fatalf("%d headers, want %d", len(hs), tc.cnt)
			}
			for i, h := range hs {
				if h.BlockHash() != view.at(tc.first+uint32(i)).hash {
					t.Fatalf("header %d is not block %d", i, tc.first+uint32(i))
				}
			}
		})
	}
	// An empty locator with an unknown stop hash gets nothing.
	m := wire.NewMsgGetHeaders()
	m.HashStop = chainhash.Hash{7}
	c.send(m)
	if got := c.sync(); len(got) != 0 {
		t.Fatalf("answer to unknown stop: %v", got)
	}
}
