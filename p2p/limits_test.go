package p2p

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/wireframe"
)

// rawHeader builds a frame header with a claimed payload length.
func rawHeader(net wire.BitcoinNet, cmd string, length uint32) []byte {
	b := make([]byte, wireframe.HeaderSize)
	binary.LittleEndian.PutUint32(b[0:4], uint32(net))
	copy(b[4:16], cmd)
	binary.LittleEndian.PutUint32(b[16:20], length)
	return b
}

// rawFrame is a frame of cmd carrying payload with a correct checksum.
func rawFrame(cmd string, payload []byte) []byte {
	b := rawHeader(chaincfg.RegressionNetParams.Net, cmd, uint32(len(payload)))
	sum := wireframe.PayloadChecksum(payload)
	copy(b[20:24], sum[:])
	return append(b, payload...)
}

// MaxPeersPerIP is no cap: a third peer from one address is admitted
// and served while slots are free. At MaxPeers a newcomer takes the place
// of a peer.
func TestPeerLimits(t *testing.T) {
	view := newFakeView(5, 14)
	cfg := testConfig(view)
	cfg.MaxPeersPerIP = 2
	srv := startServer(t, cfg)
	connect(t, srv.addr)
	connect(t, srv.addr)
	third, _ := connect(t, srv.addr)
	third.send(wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 0, &view.at(4).hash))
	if got := third.sync(); len(got) != 1 {
		t.Fatalf("third peer from one address: %d answers", len(got))
	}

	cfg = testConfig(view)
	cfg.MaxPeers = 1
	srv = startServer(t, cfg)
	first, _ := connect(t, srv.addr)
	second, _ := connect(t, srv.addr)
	first.expectDisconnect()
	second.send(wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 0, &view.at(4).hash))
	if got := second.sync(); len(got) != 1 {
		t.Fatalf("newcomer to a full server: %d answers", len(got))
	}
}

func TestHostileFramesDisconnect(t *testing.T) {
	view := newFakeView(5, 15)
	regtest := testConfig(view).Params.Net
	tests := []struct {
		name        string
		raw         []byte
		discouraged bool
	}{
		// Only a header is sent: the server must act on the claimed
		// length alone, before reading (or allocating) any payload.
		{"getcfilters claiming 1000 bytes", rawHeader(regtest, "getcfilters", 1000), true},
		{"getheaders claiming 4 MB", rawHeader(regtest, "getheaders", 4_000_000), true},
		{"tx over 4 MB", rawHeader(regtest, "tx", 4_000_001), true},
		{"unknown command over 4 MB", rawHeader(regtest, "xyzzy", 4_000_001), true},
		{"wrong magic", rawHeader(wire.MainNet, "ping", 8), true},
		{"command with garbage after NUL", rawHeader(regtest, "ping\x00x", 8), true},
		{"malformed getcfilters payload", func() []byte {
			payload := []byte{0, 1, 2} // too short
			b := rawHeader(regtest, "getcfilters", uint32(len(payload)))
			copy(b[20:24], chainhash.DoubleHashB(payload)[:4])
			return append(b, payload...)
		}(), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t, testConfig(view))
			c, _ := connect(t, srv.addr)
			if err := c.writeRaw(tc.raw); err != nil {
				t.Fatal(err)
			}
			c.expectDisconnect()
			if tc.discouraged {
				waitFor(t, "discouragement", ioTimeout, func() bool { return srv.Discouraged(netip.MustParseAddr("127.0.0.1")) })
			}
		})
	}
}

func TestGarbageBeforeHandshakeIsNotPunished(t *testing.T) {
	srv := startServer(t, testConfig(newFakeView(5, 20)))
	// What a BIP-324 client sends first: 64 bytes of ElligatorSwift key.
	c := dial(t, srv.addr)
	v2Hello := make([]byte, 64)
	for i := range v2Hello {
		v2Hello[i] = byte(i*37 + 11)
	}
	if err := c.writeRaw(v2Hello); err != nil {
		t.Fatal(err)
	}
	c.expectDisconnect()
	if srv.Discouraged(netip.MustParseAddr("127.0.0.1")) {
		t.Fatal("discouraged for a v2 hello")
	}
	// The v1 fallback connects.
	connect(t, srv.addr)
}

func TestUnknownCommandAndBadChecksumAreIgnored(t *testing.T) {
	view := newFakeView(5, 16)
	srv := startServer(t, testConfig(view))
	c, _ := connect(t, srv.addr)
	regtest := testConfig(view).Params.Net
	unknown := append(rawHeader(regtest, "sendcmpct", 9), make([]byte, 9)...)
	badSum := append(rawHeader(regtest, "ping", 8), 1, 2, 3, 4, 5, 6, 7, 8)
	for _, raw := range [][]byte{unknown, badSum} {
		if err := c.writeRaw(raw); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.sync(); len(got) != 0 {
		t.Fatalf("answers: %v", got)
	}
}

func TestTimeouts(t *testing.T) {
	view := newFakeView(5, 17)
	cfg := testConfig(view)
	cfg.HandshakeTimeout = 200 * time.Millisecond
	cfg.IdleTimeout = 300 * time.Millisecond
	cfg.PingInterval = 100 * time.Millisecond
	srv := startServer(t, cfg)

	silent := dial(t, srv.addr)
	start := time.Now()
	silent.expectDisconnect()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("handshake timeout took %v", d)
	}

	// A peer that completes the handshake and then never answers pings.
	idle, _ := connect(t, srv.addr)
	idle.keepPings = true
	idle.expectDisconnect()
	if srv.Discouraged(netip.MustParseAddr("127.0.0.1")) {
		t.Error("timeouts must not discourage")
	}
}

func TestFilterWorkIsBoundedAcrossPeers(t *testing.T) {
	view := newFakeView(50, 18)
	gate := make(chan struct{})
	var entered, inFlight, maxInFlight atomic.Int64
	view.filtersHook = func() {
		entered.Add(1)
		n := inFlight.Add(1)
		for m := maxInFlight.Load(); n > m && !maxInFlight.CompareAndSwap(m, n); m = maxInFlight.Load() {
		}
		<-gate
		inFlight.Add(-1)
	}
	cfg := testConfig(view)
	cfg.MaxFilterWork = 1
	srv := startServer(t, cfg)
	a, _ := connect(t, srv.addr)
	b, _ := connect(t, srv.addr)
	req := wire.NewMsgGetCFilters(wire.GCSFilterRegular, 10, hashPtr(view.at(20).hash))
	a.send(req)
	waitFor(t, "first read in progress", ioTimeout, func() bool { return entered.Load() == 1 })
	b.send(req)
	waitFor(t, "second request queued", ioTimeout, func() bool { return srv.env.filterWork.Waiting() == 1 })
	if entered.Load() != 1 {
		t.Fatal("second read started while the first held the only slot")
	}
	gate <- struct{}{}
	waitFor(t, "second read in progress", ioTimeout, func() bool { return entered.Load() == 2 })
	gate <- struct{}{}
	for _, c := range []*rawClient{a, b} {
		if got := c.sync(); len(got) != 11 {
			t.Fatalf("%d filters, want 11", len(got))
		}
	}
	if maxInFlight.Load() != 1 {
		t.Fatalf("%d filter reads at once, limit 1", maxInFlight.Load())
	}
}

// A handler emitting to a peer that reads nothing is held at the peer's
// budget (plus the writer's buffer), and after SendStallTimeout without a
// frame written it fails with errSendStalled.
func TestSendBudgetBlocksHandlerThenStalls(t *testing.T) {
	view := newFakeView(5, 19)
	cfg := testConfig(view)
	cfg.PeerSendBudget = 16 << 10
	cfg.SendStallTimeout = time.Second
	s, p, _, ctx := writingPipePeer(t, cfg)

	// A handler emitting 1 KiB cfilters to a peer that reads nothing.
	var emitted atomic.Int64
	done := make(chan error, 1)
	go func() {
		emit := p.emit(ctx)
		for i := 0; i < 10_000; i++ {
			m := wire.NewMsgCFilter(wire.GCSFilterRegular, &chainhash.Hash{}, make([]byte, 1000))
			if err := emit(outbound{Msg: m, Enc: wire.BaseEncoding}); err != nil {
				done <- err
				return
			}
			emitted.Add(1)
		}
		done <- nil
	}()
	frame := int64(wireframe.HeaderSize + 1 + 32 + 3 + 1000)
	waitFor(t, "budget exhausted", ioTimeout, func() bool {
		return p.budget.Queued()+frame > int64(cfg.PeerSendBudget)
	})
	select {
	case err := <-done:
		if !errors.Is(err, errSendStalled) {
			t.Fatalf("handler ended with %v, want a stall", err)
		}
	case <-time.After(ioTimeout):
		t.Fatal("handler not stopped by the stall timeout")
	}
	// Unsent bytes are bounded by the budget plus the writer's buffer; the
	// handler produced no more than that.
	if got, limit := emitted.Load()*frame, int64(cfg.PeerSendBudget+peerWriteBuffer)+frame; got > limit {
		t.Fatalf("handler emitted %d bytes to a peer reading nothing, bound %d", got, limit)
	}
	if used := s.sendPool.Shared().Used(); used > int64(cfg.PeerSendBudget) {
		t.Fatalf("server-wide pool holds %d bytes for one peer with a budget of %d", used, cfg.PeerSendBudget)
	}
}
