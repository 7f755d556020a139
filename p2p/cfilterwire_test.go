package p2p

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/internal/p2pclient"
	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/store"
	"github.com/cfindexd/cfindexd/wireframe"
)

// wireCFilterFrames returns the cfilter frames wire encodes for bs, back
// to back: what a getcfilters answer must be, byte for byte.
func wireCFilterFrames(t testing.TB, net wire.BitcoinNet, bs []*fakeBlock) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, b := range bs {
		msg := wire.NewMsgCFilter(wire.GCSFilterRegular, &b.hash, b.filter)
		if err := wire.WriteMessage(&out, msg, wire.ProtocolVersion, net); err != nil {
			t.Fatal(err)
		}
	}
	return out.Bytes()
}

// readCFilterFrames reads n cfilter frames off c raw, skipping every
// other message (pings are answered), and returns them back to back.
func readCFilterFrames(c *rawClient, n int) ([]byte, error) {
	var out []byte
	for got := 0; got < n; {
		_ = c.SetReadDeadline(time.Now().Add(testtime.Scale(ioTimeout)))
		f, err := c.ReadRaw(wireframe.MaxPayload)
		if err != nil {
			return nil, fmt.Errorf("after %d cfilters: %w", got, err)
		}
		if f.Header.Is(wire.CmdCFilter) {
			out = append(append(out, f.Header...), f.Payload...)
			got++
		}
	}
	return out, nil
}

// getCFiltersRaw sends getcfilters(start, stop) on a handshaken client and
// returns the n cfilter frames of the answer, raw.
func getCFiltersRaw(t *testing.T, c *rawClient, start uint32, stop chainhash.Hash, n int) []byte {
	t.Helper()
	c.send(wire.NewMsgGetCFilters(wire.GCSFilterRegular, start, &stop))
	got, err := readCFilterFrames(c, n)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// diffFrames reports where two frame streams first differ.
func diffFrames(got, want []byte) string {
	if bytes.Equal(got, want) {
		return ""
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	return fmt.Sprintf("%d bytes, want %d; first difference at byte %d", len(got), len(want), i)
}

// setFilterSizes gives the blocks bs, a chain from genesis, filters of the
// sizes size(i) (BIP-158 form: CompactSize N, then bytes) and the filter
// headers that chain them.
func setFilterSizes(bs []*fakeBlock, size func(i int) int) {
	var prev chainhash.Hash
	for i, b := range bs {
		n := max(size(i), 1)
		f := make([]byte, n)
		f[0] = byte(min(n-1, 0xfc)) // a CompactSize N of one byte
		for j := 1; j < n; j++ {
			f[j] = byte(i*131 + j*7)
		}
		b.filter = f
		b.filterHeader = headers.FilterHeader(f, prev)
		prev = b.filterHeader
	}
}

// Every cfilter frame the server sends, from the fake view and from a
// real store (active chain and a stale branch), is byte for byte wire's
// encoding of the message, for filter lengths on both sides of each
// CompactSize boundary and chunks that split anywhere.
func TestCFilterFramesMatchWire(t *testing.T) {
	model := newFakeView(0, 41)
	active := model.makeBranch(nil, 1200)
	sizes := []int{1, 2, 0xfc, 0xfd, 0xfe, 0xffff, 0x10000, 0x10001, 100_000, 200_000, 16 << 10, (16 << 10) - 60}
	setFilterSizes(active, func(i int) int {
		if i%50 == 7 {
			return sizes[(i/50)%len(sizes)]
		}
		return 1 + (i*37)%900
	})
	model.commit(active...)
	stale := model.makeBranch(active[1100], 40)
	var prevFH chainhash.Hash = active[1100].filterHeader
	for i, b := range stale {
		b.filter = bytes.Repeat([]byte{byte(i)}, 300+i*1000)
		b.filterHeader = headers.FilterHeader(b.filter, prevFH)
		prevFH = b.filterHeader
	}
	model.addStale(stale...)

	st, err := store.Open(filepath.Join(t.TempDir(), "filters.db"), active[0].hash, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	commitAll(t, st, active[:1101])
	commitAll(t, st, stale)
	if _, err := st.Reorg(1100, records(active[1101:])); err != nil {
		t.Fatal(err)
	}

	for _, view := range []struct {
		name string
		view ChainView
	}{{"fake view", model}, {"store", newStoreView(st)}} {
		t.Run(view.name, func(t *testing.T) {
			cfg := testConfig(nil)
			cfg.View = view.view
			srv := startServer(t, cfg)
			c, _ := connect(t, srv.addr)
			net := cfg.Params.Net
			for _, r := range []struct {
				start uint32
				stop  *fakeBlock
				want  []*fakeBlock
			}{
				{0, active[999], active[:1000]},
				{1000, active[1199], active[1000:]},
				{1101, stale[39], stale},
				{1050, stale[20], append(append([]*fakeBlock{}, active[1050:1101]...), stale[:21]...)},
			} {
				got := getCFiltersRaw(t, c, r.start, r.stop.hash, len(r.want))
				if d := diffFrames(got, wireCFilterFrames(t, net, r.want)); d != "" {
					t.Fatalf("getcfilters %d..%d: %s", r.start, r.stop.height, d)
				}
			}
		})
	}
}

// Blocks of the schema-1 fixture store (store/testdata, see its README):
// the genesis and the tip of the branch that went stale.
var (
	fixtureGenesis  = mustHash("154184de052b26727a34473e18be2818f09cd60cd8bdc18365d67185252d54f9")
	fixtureStaleTip = mustHash("0bfad602489267e485cb530a0986b7c0df1115a3b849b375bbcbfe106e9ba8e7")
)

func mustHash(s string) chainhash.Hash {
	h, err := chainhash.NewHashFromStr(s)
	if err != nil {
		panic(err)
	}
	return *h
}

// A store written by schema 1, opened (and so upgraded) by this build,
// serves byte for byte wire's cfilter frames for its active chain and its
// stale branch, while its checksums are backfilled and after.
func TestCFilterFramesFromUpgradedStore(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "store", "testdata", "store-v1.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "filters.db")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(path, fixtureGenesis, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	tip, _ := st.Tip()

	// The expected frames, from the filters the store returns (the store's
	// tests check those against the blocks the schema-1 code wrote).
	blocksTo := func(stop chainhash.Hash) []*fakeBlock {
		hashes, err := st.BlockHashesForStop(stop, 0)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]*fakeBlock, len(hashes))
		for i, h := range hashes {
			rec, _, err := st.FilterByHash(h)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = &fakeBlock{height: rec.Height, hash: h, filter: rec.Filter}
		}
		return out
	}
	activeBlocks, staleBlocks := blocksTo(tip.Hash), blocksTo(fixtureStaleTip)
	if len(activeBlocks) != 43 || len(staleBlocks) != 40 {
		t.Fatalf("fixture: %d active blocks, stale branch of %d", len(activeBlocks), len(staleBlocks))
	}

	cfg := testConfig(nil)
	cfg.View = newStoreView(st)
	srv := startServer(t, cfg)
	c, _ := connect(t, srv.addr)
	check := func(when string) {
		t.Helper()
		for _, bs := range [][]*fakeBlock{activeBlocks, staleBlocks} {
			stop := bs[len(bs)-1]
			got := getCFiltersRaw(t, c, 0, stop.hash, len(bs))
			if d := diffFrames(got, wireCFilterFrames(t, cfg.Params.Net, bs)); d != "" {
				t.Fatalf("%s: getcfilters 0..%s: %s", when, stop.hash, d)
			}
		}
	}
	check("right after the upgrade")
	deadline := time.Now().Add(testtime.Scale(30 * time.Second))
	for {
		bf, err := st.ChecksumBackfill()
		if err != nil || bf.Err != nil {
			t.Fatalf("backfill: %v %v", err, bf.Err)
		}
		if !bf.Pending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("backfill not done")
		}
		time.Sleep(5 * time.Millisecond)
	}
	check("after the backfill")
}

// dialLenient connects to addr and completes a version handshake with any
// node (btcd sends more than version and verack during it), returning a
// client for raw reads.
func dialLenient(t *testing.T, addr string, netMagic wire.BitcoinNet) *rawClient {
	t.Helper()
	c, err := tryDialNet(t, addr, "", netMagic)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Handshake(p2pclient.HandshakeOptions{Services: wire.SFNodeWitness, Relay: true, Nonce: 4242, Timeout: ioTimeout}); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	return c
}

// compareCFilterFramesWithBtcd asks btcd's P2P port and this server, over
// view and over a real store holding the same blocks, for the same
// getcfilters ranges and requires the same bytes.
func compareCFilterFramesWithBtcd(t *testing.T, btcdAddr string, cfg Config, view *fakeView) {
	t.Helper()
	tip := view.tipBlock()
	blocks := make([]*fakeBlock, tip.height+1)
	for h := range blocks {
		blocks[h] = view.at(uint32(h))
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "filters.db"), blocks[0].hash, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	commitAll(t, st, blocks)

	fromView, fromStore := cfg, cfg
	fromView.View, fromStore.View = view, newStoreView(st)
	netMagic := cfg.Params.Net
	clients := map[string]*rawClient{
		"btcd":           dialLenient(t, btcdAddr, netMagic),
		"server (view)":  dialLenient(t, startServer(t, fromView).addr, netMagic),
		"server (store)": dialLenient(t, startServer(t, fromStore).addr, netMagic),
	}
	for start := uint32(0); start <= tip.height; start += MaxGetCFilters {
		stop := min(start+MaxGetCFilters-1, tip.height)
		n := int(stop - start + 1)
		want := getCFiltersRaw(t, clients["btcd"], start, blocks[stop].hash, n)
		if d := diffFrames(wireCFilterFrames(t, netMagic, blocks[start:stop+1]), want); d != "" {
			t.Fatalf("btcd's frames for %d..%d differ from wire's encoding of its getcfilter answers: %s", start, stop, d)
		}
		for _, name := range []string{"server (view)", "server (store)"} {
			got := getCFiltersRaw(t, clients[name], start, blocks[stop].hash, n)
			if d := diffFrames(got, want); d != "" {
				t.Fatalf("%s: getcfilters %d..%d: %s than btcd's", name, start, stop, d)
			}
		}
	}
}

// maxCFHeadersFrame is what wire encodes for a full cfheaders answer.
func TestMaxCFHeadersFrame(t *testing.T) {
	if got := cfheadersPrefixLen(MaxGetCFHeaders) + MaxGetCFHeaders*chainhash.HashSize; got != maxCFHeadersFrame {
		t.Fatalf("cfheadersPrefixLen gives %d, maxCFHeadersFrame is %d", got, maxCFHeadersFrame)
	}
	msg := wire.NewMsgCFHeaders()
	for range MaxGetCFHeaders {
		if err := msg.AddCFHash(&chainhash.Hash{}); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := wire.WriteMessage(&buf, msg, wire.ProtocolVersion, wire.MainNet); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != maxCFHeadersFrame {
		t.Fatalf("wire encodes %d bytes, maxCFHeadersFrame is %d", buf.Len(), maxCFHeadersFrame)
	}
}
