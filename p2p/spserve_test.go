package p2p

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/p2p/spfilter"
	"github.com/cfindexd/cfindexd/silentpay"
)

// fakeSPBlock is one block of fakeSPView, with what a test expects of it,
// computed with package silentpay, not spfilter.
type fakeSPBlock struct {
	hash              chainhash.Hash
	tweakData, filter []byte
	commitment        chainhash.Hash
	header            chainhash.Hash
}

// fakeSPView is an in-memory spfilter.View over heights start..next-1 of a
// fakeView's active chain, with random tweak data and filters (opaque
// bytes to the server).
type fakeSPView struct {
	start  uint32
	blocks []fakeSPBlock
}

var _ spfilter.View = (*fakeSPView)(nil)

func newFakeSPView(view *fakeView, start, next uint32, seed uint64) *fakeSPView {
	rng := rand.New(rand.NewPCG(seed, 352))
	sp := &fakeSPView{start: start}
	var prev chainhash.Hash
	for h := start; h < next; h++ {
		b := fakeSPBlock{hash: view.at(h).hash, tweakData: make([]byte, rng.IntN(3)*42+1), filter: make([]byte, 1+rng.IntN(60))}
		for _, s := range [][]byte{b.tweakData, b.filter} {
			for i := range s {
				s[i] = byte(rng.Uint32())
			}
		}
		c := silentpay.NewCommitment(b.tweakData, b.filter)
		b.commitment, b.header = c.Hash(), c.Header(prev)
		prev = b.header
		sp.blocks = append(sp.blocks, b)
	}
	return sp
}

func (v *fakeSPView) next() uint32 { return v.start + uint32(len(v.blocks)) }

func (v *fakeSPView) at(h uint32) *fakeSPBlock { return &v.blocks[h-v.start] }

func (v *fakeSPView) Range() (uint32, uint32) { return v.start, v.next() }

func (v *fakeSPView) Block(h uint32) (spfilter.Block, error) {
	if h < v.start || h >= v.next() {
		return spfilter.Block{}, fmt.Errorf("height %d: %w", h, spfilter.ErrNotFound)
	}
	b := v.at(h)
	return spfilter.Block{BlockHash: b.hash, TweakData: bytes.Clone(b.tweakData), Filter: bytes.Clone(b.filter)}, nil
}

func (v *fakeSPView) entry(h uint32) spfilter.Header {
	b := v.at(h)
	return spfilter.Header{Height: h, BlockHash: b.hash, Header: b.header, Commitment: b.commitment}
}

func (v *fakeSPView) Headers(start, end uint32) ([]spfilter.Header, error) {
	if start < v.start || end >= v.next() || end < start {
		return nil, fmt.Errorf("heights %d..%d: %w", start, end, spfilter.ErrNotFound)
	}
	out := make([]spfilter.Header, 0, end-start+1)
	for h := start; h <= end; h++ {
		out = append(out, v.entry(h))
	}
	return out, nil
}

func (v *fakeSPView) Checkpoints(stop chainhash.Hash) ([]spfilter.Header, error) {
	for h := v.start; h < v.next(); h++ {
		if v.at(h).hash != stop {
			continue
		}
		var out []spfilter.Header
		for c := (v.start + 999) / 1000 * 1000; c <= h; c += 1000 {
			out = append(out, v.entry(c))
		}
		return out, nil
	}
	return nil, fmt.Errorf("stop %s: %w", stop, spfilter.ErrNotFound)
}

// spFrame is the frame wire itself writes for msg: the oracle.
func spFrame(t *testing.T, msg wire.Message) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := wire.WriteMessage(&buf, msg, wire.ProtocolVersion, chaincfg.RegressionNetParams.Net); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readFrames reads n frames as raw bytes (the server's pings answered).
func (c *rawClient) readFrames(n int) [][]byte {
	c.t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(ioTimeout))
	out := make([][]byte, 0, n)
	for range n {
		f, err := c.ReadRaw(8 << 20)
		if err != nil {
			c.t.Fatalf("read frame %d of %d: %v", len(out)+1, n, err)
		}
		out = append(out, append(bytes.Clone(f.Header), f.Payload...))
	}
	return out
}

// spTestServer serves a 2,600-block fake chain whose silent-payment index
// covers heights 5..2,400.
func spTestServer(t *testing.T) (*testServer, *fakeView, *fakeSPView) {
	view := newFakeView(2600, 19)
	sp := newFakeSPView(view, 5, 2401, 19)
	cfg := testConfig(view)
	cfg.SilentPayments = sp
	return startServer(t, cfg), view, sp
}

// The silent-payment type is served byte for byte as wire would write the
// expected messages: cfilter data = CompactSize(len(tweak data)) || tweak
// data || filter, cfheaders of commitment hashes chained from zero at the
// index's first height, cfcheckpt zero below it; and the service bit says
// so.
func TestSPFilterTypeAnswersByteExact(t *testing.T) {
	srv, view, sp := spTestServer(t)
	c, version := connect(t, srv.addr)
	if version.Services&spfilter.ServiceFlag == 0 {
		t.Fatalf("services %v without the silent-payment bit", version.Services)
	}
	data := func(h uint32) []byte {
		var buf bytes.Buffer
		b := sp.at(h)
		_ = wire.WriteVarInt(&buf, 0, uint64(len(b.tweakData)))
		buf.Write(b.tweakData)
		buf.Write(b.filter)
		return buf.Bytes()
	}
	for _, r := range []struct{ start, stop uint32 }{{5, 5}, {5, 1004}, {1400, 2399}, {2400, 2400}} {
		c.send(wire.NewMsgGetCFilters(spfilter.FilterType, r.start, &sp.at(r.stop).hash))
		got := c.readFrames(int(r.stop - r.start + 1))
		for i, f := range got {
			h := r.start + uint32(i)
			if want := spFrame(t, wire.NewMsgCFilter(spfilter.FilterType, &sp.at(h).hash, data(h))); !bytes.Equal(f, want) {
				t.Fatalf("cfilter %d..%d at %d:\n got %x\nwant %x", r.start, r.stop, h, f, want)
			}
			if d, err := spfilter.DataCommitment(data(h)); err != nil || d != sp.at(h).commitment {
				t.Fatalf("DataCommitment at %d = %s, %v; silentpay says %s", h, d, err, sp.at(h).commitment)
			}
		}
	}
	for _, r := range []struct{ start, stop uint32 }{{5, 2004}, {6, 6}, {401, 2400}} {
		c.send(wire.NewMsgGetCFHeaders(spfilter.FilterType, r.start, &sp.at(r.stop).hash))
		var prev chainhash.Hash
		if r.start > 5 {
			prev = sp.at(r.start - 1).header
		}
		want := wire.NewMsgCFHeaders()
		want.FilterType, want.StopHash, want.PrevFilterHeader = spfilter.FilterType, sp.at(r.stop).hash, prev
		for h := r.start; h <= r.stop; h++ {
			_ = want.AddCFHash(&sp.at(h).commitment)
		}
		if got := c.readFrames(1)[0]; !bytes.Equal(got, spFrame(t, want)) {
			t.Fatalf("cfheaders %d..%d differ from wire's", r.start, r.stop)
		}
	}
	for _, stop := range []uint32{5, 999, 1000, 2400} {
		want := wire.NewMsgCFCheckpt(spfilter.FilterType, &view.at(stop).hash, int(stop/1000))
		for h := uint32(1000); h <= stop; h += 1000 {
			if err := want.AddCFHeader(&sp.at(h).header); err != nil {
				t.Fatal(err)
			}
		}
		c.send(wire.NewMsgGetCFCheckpt(spfilter.FilterType, &view.at(stop).hash))
		if got := c.readFrames(1)[0]; !bytes.Equal(got, spFrame(t, want)) {
			t.Fatalf("cfcheckpt to %d differs from wire's", stop)
		}
	}
	// Below the index's first height, above its last, or on a stale
	// branch: ignored, and the peer stays (its ping is answered).
	stale := view.makeBranch(view.at(100), 5)
	view.addStale(stale...)
	for _, msg := range []wire.Message{
		wire.NewMsgGetCFilters(spfilter.FilterType, 4, &view.at(10).hash),
		wire.NewMsgGetCFilters(spfilter.FilterType, 2300, &view.at(2401).hash),
		wire.NewMsgGetCFHeaders(spfilter.FilterType, 0, &view.at(10).hash),
		wire.NewMsgGetCFHeaders(spfilter.FilterType, 2401, &view.at(2500).hash),
		wire.NewMsgGetCFCheckpt(spfilter.FilterType, &view.at(4).hash),
		wire.NewMsgGetCFCheckpt(spfilter.FilterType, &view.at(2599).hash),
		wire.NewMsgGetCFilters(spfilter.FilterType, 100, &stale[4].hash),
		wire.NewMsgGetCFCheckpt(spfilter.FilterType, &stale[4].hash),
	} {
		c.send(msg)
		if got := c.sync(); len(got) != 0 {
			t.Fatalf("%s outside the index answered with %d messages", msg.Command(), len(got))
		}
	}
	// BIP-157's limits hold for the type: over them, disconnect.
	c.send(wire.NewMsgGetCFilters(spfilter.FilterType, 100, &view.at(1100).hash))
	c.expectDisconnect()
}

// With the index off the type is unknown: no service bit, and asking for
// it disconnects as Core does.
func TestSPFilterTypeRefusedWhenOff(t *testing.T) {
	view := newFakeView(20, 7)
	srv := startServer(t, testConfig(view))
	for _, msg := range []wire.Message{
		wire.NewMsgGetCFCheckpt(spfilter.FilterType, &view.at(10).hash),
		wire.NewMsgGetCFHeaders(spfilter.FilterType, 1, &view.at(10).hash),
		wire.NewMsgGetCFilters(spfilter.FilterType, 1, &view.at(10).hash),
	} {
		c, version := connect(t, srv.addr)
		if version.Services&spfilter.ServiceFlag != 0 {
			t.Fatalf("services %v advertise the silent-payment type while it is off", version.Services)
		}
		c.send(msg)
		c.expectDisconnect()
	}
}

// The type's requests allocate a small multiple of their answer, and
// requests outside the index next to nothing, however much they ask.
func TestSPFilterTypeAllocations(t *testing.T) {
	view := newFakeView(2600, 23)
	sp := newFakeSPView(view, 5, 2401, 23)
	cfg := testConfig(view)
	cfg.SilentPayments = sp
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := net.Pipe()
	t.Cleanup(func() { ours.Close(); theirs.Close() })
	p := pipePeer(t, s, ours)
	ctx := context.Background()
	tests := []struct {
		name   string
		msg    wire.Message
		answer bool
	}{
		{"getcfilters 1000", wire.NewMsgGetCFilters(spfilter.FilterType, 1000, &view.at(1999).hash), true},
		{"getcfheaders 2000", wire.NewMsgGetCFHeaders(spfilter.FilterType, 400, &view.at(2399).hash), true},
		{"getcfcheckpt", wire.NewMsgGetCFCheckpt(spfilter.FilterType, &view.at(2400).hash), true},
		{"getcfilters above the index", wire.NewMsgGetCFilters(spfilter.FilterType, 1600, &view.at(2599).hash), false},
		{"getcfheaders below the index", wire.NewMsgGetCFHeaders(spfilter.FilterType, 0, &view.at(1999).hash), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var answered int
			emit := func(o outbound) error {
				answered += o.size()
				if o.Recycle != nil {
					o.Recycle(o.Frame)
				}
				return nil
			}
			run := func() {
				answered = 0
				if err := dispatch(ctx, s.env, p.st, tc.msg, emit); err != nil {
					t.Fatal(err)
				}
			}
			run()
			if (answered > 0) != tc.answer {
				t.Fatalf("answered %d bytes, want an answer: %v", answered, tc.answer)
			}
			if raceEnabled {
				t.Skip("allocations not counted under the race detector (its sync.Pool drops pooled frames)")
			}
			const runs = 10
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range runs {
				run()
			}
			runtime.ReadMemStats(&after)
			perRun := (after.TotalAlloc - before.TotalAlloc) / runs
			// The view's copies of what it reads, the frames grown in
			// chunks, and a few KiB of bookkeeping.
			if limit := uint64(4*answered + 16<<10); perRun > limit {
				t.Fatalf("allocated %d bytes for a %d-byte answer, limit %d", perRun, answered, limit)
			}
		})
	}
}
