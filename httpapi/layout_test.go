package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"runtime"
	"strconv"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/rangefile"
)

// layoutTip and layoutDepth give two final ranges (0 and 2000) and one
// that is not (4000).
const (
	layoutTip   = 4010
	layoutDepth = 6
)

// layoutServer serves a synthetic regtest chain to layoutTip with the
// silent-payment index from height 1.
func layoutServer(tb testing.TB) (*Server, []BlockRecord) {
	tb.Helper()
	chain := synthChain(tb, layoutTip, 11)
	return newTestServer(tb, synthView(tb, chain), Config{Net: wire.TestNet, ReorgSafetyDepth: layoutDepth, NetName: "regtest",
		Genesis: *chaincfg.RegressionNetParams.GenesisHash, SilentPayments: newFakeSP(chain, 1, 9)}), chain
}

// get fetches path and fails the test unless it is answered code.
func get(tb testing.TB, s *Server, path string, code int) ([]byte, string) {
	tb.Helper()
	resp := do(tb, s.Handler(), "GET", path, nil)
	b := body(tb, resp)
	if resp.StatusCode != code {
		tb.Fatalf("%s: %d %q, want %d", path, resp.StatusCode, b, code)
	}
	return b, resp.Header.Get("Cache-Control")
}

// TestLayoutRoutesAreTheBulkFiles: each final range's layout objects are
// byte for byte the /bulk and /sp files of the same range, immutable; the
// import files are the neutrino range files of heights 0 to the newest
// final range's end, with max-age 60; a range that is not final is 404.
func TestLayoutRoutesAreTheBulkFiles(t *testing.T) {
	s, _ := layoutServer(t)
	for _, start := range []uint32{0, 2000} {
		a, b := strconv.Itoa(int(start)), strconv.Itoa(int(start)+1999)
		pairs := [][2]string{
			{"/headers/" + a, "/bulk/headers/" + a + "-" + b + ".bin"},
			{"/filter-headers/" + a, "/bulk/filterheaders/" + a + "-" + b + ".bin"},
			{"/filters/" + a, "/bulk/filters/" + a + ".bin"},
		}
		for _, p := range pairs {
			got, cc := get(t, s, p[0], 200)
			want, _ := get(t, s, p[1], 200)
			if string(got) != string(want) || len(got) == 0 {
				t.Errorf("%s: %d bytes differ from %s's %d", p[0], len(got), p[1], len(want))
			}
			if cc != rangefile.ImmutableCacheControl {
				t.Errorf("%s: Cache-Control %q", p[0], cc)
			}
		}
	}
	for _, p := range [][2]string{
		{"/headers/import/latest", "/bulk/neutrino/blockheaders/0-3999.bin"},
		{"/filter-headers/import/latest", "/bulk/neutrino/filterheaders/0-3999.bin"},
	} {
		got, cc := get(t, s, p[0], 200)
		want, _ := get(t, s, p[1], 200)
		if string(got) != string(want) {
			t.Errorf("%s: %d bytes differ from %s's %d", p[0], len(got), p[1], len(want))
		}
		if cc != rangefile.MutableCacheControl {
			t.Errorf("%s: Cache-Control %q", p[0], cc)
		}
	}
	for _, p := range []string{"/headers/4000", "/filter-headers/4000", "/filters/4000", "/filters/4292000000"} {
		get(t, s, p, 404)
	}
	for _, p := range []string{"/headers/1", "/filters/02000", "/filters/4294966000", "/filter-headers/4294967295"} {
		get(t, s, p, 400)
	}
}

// TestLayoutManifest: /manifest.json lists the final ranges with the
// SHA-256 of each object as served, the end block hash and filter header,
// and the import files; /latest names the newest range and the manifest's
// hash; a second request (from the catalog) gives the same bytes.
func TestLayoutManifest(t *testing.T) {
	s, chain := layoutServer(t)
	mb, cc := get(t, s, "/manifest.json", 200)
	if cc != rangefile.MutableCacheControl {
		t.Errorf("manifest Cache-Control %q", cc)
	}
	m, err := rangefile.ParseManifest(mb)
	if err != nil {
		t.Fatal(err)
	}
	if m.Network != "regtest" || m.Genesis != chain[0].Hash.String() || len(m.Ranges) != 2 {
		t.Fatalf("manifest %s %s with %d ranges", m.Network, m.Genesis, len(m.Ranges))
	}
	sum := func(path string) string {
		b, _ := get(t, s, path, 200)
		h := sha256.Sum256(b)
		return hex.EncodeToString(h[:])
	}
	for _, r := range m.Ranges {
		if r.EndBlockHash != chain[r.End].Hash.String() || r.EndFilterHeader != chain[r.End].FilterHeader.String() {
			t.Errorf("range %d: end %s %s", r.Start, r.EndBlockHash, r.EndFilterHeader)
		}
		if len(r.Objects) != 3+len(rangefile.DustLevels) {
			t.Errorf("range %d: %d objects", r.Start, len(r.Objects))
		}
		for name, h := range r.Objects {
			path := "/" + name
			if name[:3] == "sp/" {
				path = "/" + name // the same name as /sp/tweaks/<dust>/<start>
			}
			if got := sum(path); got != h {
				t.Errorf("%s: served bytes hash to %s, manifest says %s", name, got, h)
			}
		}
	}
	for name, imp := range m.Imports {
		if imp.End != 3999 || sum("/"+name) != imp.SHA256 {
			t.Errorf("import %s: %+v", name, imp)
		}
	}
	lb, _ := get(t, s, "/latest", 200)
	l, err := rangefile.ParseLatest(lb)
	if err != nil {
		t.Fatal(err)
	}
	ms := sha256.Sum256(mb)
	if l.Start != 2000 || l.End != 3999 || l.EndBlockHash != chain[3999].Hash.String() || l.ManifestSHA256 != hex.EncodeToString(ms[:]) {
		t.Errorf("latest %+v", l)
	}
	if again, _ := get(t, s, "/manifest.json", 200); string(again) != string(mb) {
		t.Error("second manifest differs")
	}
	short := newTestServer(t, synthView(t, chain[:2000]), Config{NetName: "regtest", ReorgSafetyDepth: layoutDepth})
	for _, p := range []string{"/manifest.json", "/latest", "/headers/import/latest", "/headers/0"} {
		get(t, short, p, 404)
	}
	off := newTestServer(t, synthView(t, chain), Config{ReorgSafetyDepth: layoutDepth})
	get(t, off, "/manifest.json", 404)
}

// TestLayoutRequestsAllocateTheirAnswer: a layout range costs what its
// /bulk twin costs, and any other layout request at most a small multiple
// of its answer (the manifest once cataloged).
func TestLayoutRequestsAllocateTheirAnswer(t *testing.T) {
	s, _ := layoutServer(t)
	alloc := func(path string) (uint64, int) {
		do(t, s.Handler(), "GET", path, nil) // warm up
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		resp := do(t, s.Handler(), "GET", path, nil)
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc, len(body(t, resp))
	}
	for _, p := range [][2]string{
		{"/headers/2000", "/bulk/headers/2000-3999.bin"},
		{"/filter-headers/0", "/bulk/filterheaders/0-1999.bin"},
		{"/filters/2000", "/bulk/filters/2000.bin"},
		{"/headers/import/latest", "/bulk/neutrino/blockheaders/0-3999.bin"},
	} {
		got, _ := alloc(p[0])
		want, _ := alloc(p[1])
		if got > want+want/4+16<<10 {
			t.Errorf("%s: %d bytes allocated, %s %d", p[0], got, p[1], want)
		}
	}
	for _, path := range []string{"/manifest.json", "/latest", "/headers/4000", "/filters/4292000000", "/filters/01"} {
		if a, n := alloc(path); a > uint64(64<<10+8*n) {
			t.Errorf("%s: %d bytes allocated for a %d-byte answer", path, a, n)
		}
	}
}

// TestLayoutManifestBusy: while one computation of the manifest runs,
// another request is answered 503 with Retry-After at once instead of
// queueing with a bulk slot held; afterwards it is served.
func TestLayoutManifestBusy(t *testing.T) {
	s, _ := layoutServer(t)
	entered, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		var once bool
		_, _, err := s.catalog.Documents(func(fn func(rangefile.Reader) error) error {
			if !once {
				once = true
				close(entered)
				<-release
			}
			return s.rangeRead(fn)
		}, nil, layoutTip, layoutDepth, true)
		done <- err
	}()
	<-entered
	resp := do(t, s.Handler(), "GET", "/manifest.json", nil)
	body(t, resp)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("manifest while busy: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	get(t, s, "/manifest.json", 200)
}
