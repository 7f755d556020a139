package httpapi

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// fakeSP is an in-memory SPIndex over a synthetic chain: every block from
// start has a few tweaks with values on both sides of each dust level, an
// arbitrary filter, and the commitment chain computed here as
// docs/silent-payments.md specifies, independently of the server.
type fakeSP struct {
	start  uint32
	blocks []SPBlock // by height; below start unused
}

var _ SPIndex = (*fakeSP)(nil)

// spValues straddle every dust level of block-dn and BlindBit.
var spValues = []uint64{0, 330, 600, 601, 1000, 1001, 3750, 3751, 100000}

func newFakeSP(chain []BlockRecord, start uint32, seed uint64) *fakeSP {
	rng := rand.New(rand.NewPCG(seed, 0))
	f := &fakeSP{start: start, blocks: make([]SPBlock, len(chain))}
	var prev chainhash.Hash
	for h := int(start); h < len(chain); h++ {
		b := SPBlock{Height: uint32(h), BlockHash: chain[h].Hash}
		n := rng.IntN(5)
		b.TweakData = wirescan.AppendCompactSize(nil, uint64(n))
		for i := range n {
			var tw SPTweak
			tw.Point[0] = 2 + byte(rng.IntN(2))
			for j := 1; j < len(tw.Point); j++ {
				tw.Point[j] = byte(rng.Uint32())
			}
			tw.MaxValue = spValues[rng.IntN(len(spValues))]
			b.Tweaks = append(b.Tweaks, tw)
			b.TweakData = wirescan.AppendCompactSize(b.TweakData, uint64(2*i+1))
			b.TweakData = append(b.TweakData, tw.Point[:]...)
			b.TweakData = binary.LittleEndian.AppendUint64(b.TweakData, tw.MaxValue)
		}
		b.Filter = append([]byte{byte(n)}, bytes.Repeat([]byte{byte(h)}, 3*n)...)
		b.TweakHash, b.FilterHash = chainhash.DoubleHashH(b.TweakData), chainhash.DoubleHashH(b.Filter)
		commitment := chainhash.DoubleHashH(append(b.TweakHash[:], b.FilterHash[:]...))
		b.Header = chainhash.DoubleHashH(append(commitment[:], prev[:]...))
		prev = b.Header
		f.blocks[h] = b
	}
	return f
}

func (f *fakeSP) SPState() SPState { return SPState{Start: f.start, Next: uint32(len(f.blocks))} }

func (f *fakeSP) span(start, end uint32, part func(SPBlock) SPBlock) ([]SPBlock, error) {
	if start < f.start || end < start || int(end) >= len(f.blocks) || end-start >= MaxRange {
		return nil, fmt.Errorf("sp %d..%d: %w", start, end, ErrNotFound)
	}
	out := make([]SPBlock, 0, end-start+1)
	for _, b := range f.blocks[start : end+1] {
		out = append(out, part(b))
	}
	return out, nil
}

func (f *fakeSP) SPTweaks(start, end uint32) ([]SPBlock, error) {
	return f.span(start, end, func(b SPBlock) SPBlock { b.Filter = nil; return b })
}

func (f *fakeSP) SPFilters(start, end uint32) ([]SPBlock, error) {
	return f.span(start, end, func(b SPBlock) SPBlock { b.TweakData, b.Tweaks = nil, nil; return b })
}

func (f *fakeSP) SPHeaders(start, end uint32) ([]SPBlock, error) {
	return f.span(start, end, func(b SPBlock) SPBlock { b.TweakData, b.Tweaks, b.Filter = nil, nil, nil; return b })
}

func (f *fakeSP) SPCheckpoints(stop chainhash.Hash) ([]SPBlock, error) {
	var out []SPBlock
	for h := uint32(SPCheckpointInterval); int(h) < len(f.blocks); h += SPCheckpointInterval {
		out = append(out, f.blocks[h])
		if f.blocks[h].BlockHash == stop {
			break
		}
	}
	return out, nil
}

func spTestServer(t *testing.T, n int, cfg Config) (*Server, []BlockRecord, *fakeSP) {
	t.Helper()
	chain := synthChain(t, n, 11)
	sp := newFakeSP(chain, 1, 5)
	cfg.SilentPayments = sp
	cfg.Net = wire.TestNet
	return newTestServer(t, synthView(t, chain), cfg), chain, sp
}

// TestSPTweaksBlockDNBytes: /sp/tweaks/<dust>/<start> is block-dn's file
// byte for byte at every dust level: the 18-byte header, one record per
// height in height order (a zero byte below the index's first height),
// each the count and the points of the tweaks worth more than the dust
// level, in transaction order.
func TestSPTweaksBlockDNBytes(t *testing.T) {
	s, chain, sp := spTestServer(t, 60, Config{})
	h := s.Handler()
	for _, dust := range []uint64{0, 600, 1000, 3750} {
		want := []byte{0xfa, 0xbf, 0xb5, 0xda, 0, 2, 0, 0, 0, 0} // regtest magic as on the wire, version 0, type 2, start 0
		want = binary.LittleEndian.AppendUint64(want, dust)
		want = append(want, 0) // height 0, below the index
		for _, b := range sp.blocks[1:len(chain)] {
			var keep [][]byte
			for _, tw := range b.Tweaks {
				if tw.MaxValue > dust {
					keep = append(keep, tw.Point[:])
				}
			}
			want = append(want, byte(len(keep)))
			want = append(want, bytes.Join(keep, nil)...)
		}
		resp := do(t, h, "GET", fmt.Sprintf("/sp/tweaks/%d/0", dust), nil)
		got := body(t, resp)
		if resp.StatusCode != 200 || !bytes.Equal(got, want) {
			t.Fatalf("dust %d: %d, %d bytes, want %d; header %x", dust, resp.StatusCode, len(got), len(want), got[:min(len(got), 18)])
		}
		if cc := resp.Header.Get("Cache-Control"); strings.Contains(cc, "immutable") || !strings.HasPrefix(resp.Header.Get("ETag"), `W/"`) {
			t.Errorf("dust %d: partial range cached as %q, ETag %q", dust, cc, resp.Header.Get("ETag"))
		}
		again := do(t, h, "GET", fmt.Sprintf("/sp/tweaks/%d/0", dust), http.Header{"If-None-Match": {resp.Header.Get("ETag")}})
		if body(t, again); again.StatusCode != http.StatusNotModified {
			t.Errorf("dust %d: If-None-Match answered %d", dust, again.StatusCode)
		}
	}
	for path, code := range map[string]int{
		"/sp/tweaks/1/0": 400, "/sp/tweaks/0/1": 400, "/sp/tweaks/0/2000": 404, "/sp/tweaks/00/0": 400,
		"/sp/tweakdata/4000": 404, "/sp/nothing/0": 404, "/sp/tweaks/0/": 400,
	} {
		resp := do(t, h, "GET", path, nil)
		if b := body(t, resp); resp.StatusCode != code || len(b) < 2 {
			t.Errorf("%s: %d %q, want %d with a reason", path, resp.StatusCode, b, code)
		}
	}
}

// TestSPRangeFinality: a full range ReorgSafetyDepth below the tip is final
// (immutable); the index's partial range and one too near the tip are not;
// a range above the index is refused.
func TestSPRangeFinality(t *testing.T) {
	s := newTestServer(t, newFakeView(), Config{ReorgSafetyDepth: 100, SilentPayments: &fakeSP{start: 1, blocks: make([]SPBlock, 4150)}})
	tip := Tip{Height: 4200}
	for _, tc := range []struct {
		start, end uint32
		final      bool
		refused    bool
	}{
		{0, 1999, true, false}, {2000, 3999, true, false}, {4000, 4149, false, false}, {6000, 0, false, true},
	} {
		tg := parseSP(fmt.Sprintf("tweaks/0/%d", tc.start))
		start, end, final, refusal := s.spRange(tg, tip, true)
		if (refusal != "") != tc.refused || (!tc.refused && (start != tc.start || end != tc.end || final != tc.final)) {
			t.Errorf("start %d: %d..%d final %v %q", tc.start, start, end, final, refusal)
		}
	}
	if _, _, final, _ := s.spRange(parseSP("tweaks/0/2000"), Tip{Height: 4050}, true); final {
		t.Error("range 2000..3999 final 51 blocks below the tip")
	}
	if start, _, _, _ := s.spRange(parseSP("headers/0"), tip, true); start != 1 {
		t.Errorf("headers range starts at %d, want the index's first height 1", start)
	}
}

// TestSPCommitmentFiles: /sp/tweakdata, /sp/filters and /sp/headers hold
// the index's data from its first height, and the headers chain over the
// hashes of the tweak data and filters served.
func TestSPCommitmentFiles(t *testing.T) {
	s, chain, _ := spTestServer(t, 40, Config{})
	h := s.Handler()
	get := func(path string) []byte {
		resp := do(t, h, "GET", path, nil)
		b := body(t, resp)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		return b
	}
	records := func(b []byte) [][]byte {
		r := wirescan.NewReader(b)
		var out [][]byte
		for r.Len() > 0 {
			n, err := r.CompactSize()
			if err != nil {
				t.Fatal(err)
			}
			rec, err := r.Next(int(n))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rec)
		}
		return out
	}
	tweaks, filters, headers := records(get("/sp/tweakdata/0")), records(get("/sp/filters/0")), get("/sp/headers/0")
	if len(tweaks) != len(chain)-1 || len(filters) != len(chain)-1 || len(headers) != (len(chain)-1)*spHeaderRecord {
		t.Fatalf("%d tweak records, %d filters, %d header bytes for %d blocks", len(tweaks), len(filters), len(headers), len(chain)-1)
	}
	var prev chainhash.Hash
	for i := range tweaks {
		rec := headers[i*spHeaderRecord:]
		th, fh := chainhash.DoubleHashH(tweaks[i]), chainhash.DoubleHashH(filters[i])
		c := chainhash.DoubleHashH(append(th[:], fh[:]...))
		want := chainhash.DoubleHashH(append(c[:], prev[:]...))
		if !bytes.Equal(rec[:32], chain[i+1].Hash[:]) || !bytes.Equal(rec[32:64], want[:]) || !bytes.Equal(rec[64:96], th[:]) || !bytes.Equal(rec[96:128], fh[:]) {
			t.Fatalf("header record at %d does not chain over the data served", i+1)
		}
		prev = want
	}
	var cp spCheckpoints
	if err := json.Unmarshal(get("/sp/checkpoints"), &cp); err != nil {
		t.Fatal(err)
	}
	if cp.StartHeight != 1 || cp.Height != 40 || cp.BlockHash != chain[40].Hash.String() || cp.Header != prev.String() || cp.Interval != 1000 || cp.Checkpoints == nil {
		t.Errorf("checkpoints %+v", cp)
	}
}

// TestBlindBitShapes: the /blindbit/ endpoints answer BlindBit Oracle v1's
// JSON byte for byte: info, block-height, the tweaks array with its dust
// rule (at least the limit), the new-utxos filter, and its error shape.
func TestBlindBitShapes(t *testing.T) {
	s, chain, sp := spTestServer(t, 30, Config{})
	h := s.Handler()
	b7 := sp.blocks[7]
	tweaks := func(dust uint64) string {
		out := []string{}
		for _, tw := range b7.Tweaks {
			if tw.MaxValue >= dust {
				out = append(out, `"`+hex.EncodeToString(tw.Point[:])+`"`)
			}
		}
		return "[" + strings.Join(out, ",") + "]"
	}
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/blindbit/info", 200, `{"network":"regtest","height":30,"tweaks_only":false,"tweaks_full_basic":true,"tweaks_full_with_dust_filter":true,"tweaks_cut_through_with_dust_filter":false}`},
		{"/blindbit/block-height", 200, `{"block_height":30}`},
		{"/blindbit/tweaks/7", 200, tweaks(0)},
		{"/blindbit/tweaks/7?dustLimit=1000", 200, tweaks(1000)},
		{"/blindbit/tweak-index/7?dustLimit=3751", 200, tweaks(3751)},
		{"/blindbit/filter/new-utxos/7", 200, `{"filter_type":4,"block_height":7,"block_hash":"` + chain[7].Hash.String() + `","data":"` + hex.EncodeToString(b7.Filter) + `"}`},
		{"/blindbit/tweaks/31", 404, `{"error":"block height 31 is not indexed"}`},
		{"/blindbit/tweaks/0", 404, `{"error":"block height 0 is not indexed"}`},
		{"/blindbit/tweaks/x", 400, `{"error":"could not parse block height"}`},
		{"/blindbit/tweaks/7?dustLimit=-1", 400, `{"error":"Invalid dustLimit parameter"}`},
		{"/blindbit/filter/other/7", 400, `{"error":"invalid filter type"}`},
		{"/blindbit/utxos/7", 404, `{"error":"not served: cfindexd keeps no per-output data; fetch the block"}`},
	} {
		resp := do(t, h, "GET", tc.path, nil)
		if got := string(body(t, resp)); resp.StatusCode != tc.code || got != tc.want || resp.Header.Get("Content-Type") != ctJSON {
			t.Errorf("%s: %d %s\nwant %d %s", tc.path, resp.StatusCode, got, tc.code, tc.want)
		}
	}
	off := newTestServer(t, synthView(t, chain), Config{}).Handler()
	for _, p := range []string{"/blindbit/info", "/sp/tweaks/0/0", "/sp/checkpoints"} {
		if resp := do(t, off, "GET", p, nil); resp.StatusCode != 404 {
			t.Errorf("%s without the index: %d", p, resp.StatusCode)
		}
	}
}

// TestSPRequestsAllocateTheirAnswer: no silent-payment request costs more
// than a small multiple of its answer, whatever a client puts in its
// target (a huge query, a height far above the index).
func TestSPRequestsAllocateTheirAnswer(t *testing.T) {
	s, _, _ := spTestServer(t, 60, Config{})
	h := s.Handler()
	long := "/blindbit/tweaks/7?" + strings.Repeat("a=b&", 900) + "dustLimit=600"
	for _, path := range []string{"/sp/tweaks/0/0", "/sp/tweakdata/0", "/sp/filters/0", "/sp/headers/0", "/sp/checkpoints",
		"/blindbit/tweaks/7", "/blindbit/filter/new-utxos/7", "/blindbit/info", long, "/sp/tweaks/0/4294966000", "/blindbit/tweaks/4294967295"} {
		do(t, h, "GET", path, nil) // warm up
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		resp := do(t, h, "GET", path, nil)
		runtime.ReadMemStats(&after)
		n := len(body(t, resp))
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(64<<10+8*n) {
			t.Errorf("%s: %d bytes allocated for a %d-byte answer", path, alloc, n)
		}
	}
}
