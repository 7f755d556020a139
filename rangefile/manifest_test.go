package rangefile

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// testManifest is a manifest of n ranges with distinct hashes.
func testManifest(n int) (Manifest, []byte) {
	ranges := make([]RangeEntry, n)
	for i := range ranges {
		start := uint32(i) * Size
		h := func(k byte) [32]byte { return sha256.Sum256([]byte{byte(i), k}) }
		ranges[i] = RangeEntry{Start: start, End: End(start), EndBlockHash: chainhash.Hash(h(1)).String(),
			EndFilterHeader: chainhash.Hash(h(2)).String(), Objects: map[string]string{
				HeadersName(start): hexOf(h(3)), FilterHeadersName(start): hexOf(h(4)), FiltersName(start): hexOf(h(5)),
				TweaksName(600, start): hexOf(h(6))}}
	}
	nw := Network{Name: "regtest", Net: wire.TestNet, Genesis: chainhash.Hash{1}}
	m := NewManifest(nw, ranges, newObject(HeadersImportName, []byte("a")), newObject(FilterHeadersImportName, []byte("b")))
	return m, m.Encode()
}

// TestManifestRoundTrip: an encoded manifest parses back to itself and
// encodes to the same bytes; latest names its last range and its hash.
func TestManifestRoundTrip(t *testing.T) {
	m, b := testManifest(3)
	got, err := ParseManifest(b)
	if err != nil {
		t.Fatal(err)
	}
	if again := got.Encode(); !bytes.Equal(again, b) {
		t.Fatalf("re-encoded\n%s\nwant\n%s", again, b)
	}
	l := LatestOf(&m, b)
	lb := l.Encode()
	pl, err := ParseLatest(lb)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if pl.Start != 4000 || pl.End != 5999 || pl.ManifestSHA256 != hexOf(sum) || pl.EndBlockHash != m.Ranges[2].EndBlockHash {
		t.Errorf("latest %+v", pl)
	}
}

// TestParseManifestRejects: every rule of the layout breaks the parse with
// ErrBadManifest.
func TestParseManifestRejects(t *testing.T) {
	_, good := testManifest(2)
	s := string(good)
	for _, tc := range []struct{ name, from, to string }{
		{"version", `"version":1`, `"version":2`},
		{"range size", `"range_size":2000`, `"range_size":1000`},
		{"gap", `"start":2000,"end":3999`, `"start":4000,"end":5999`},
		{"short range", `"start":2000,"end":3999`, `"start":2000,"end":3998`},
		{"bad hash", `"genesis":"`, `"genesis":"x`},
		{"foreign object", `"filters/2000"`, `"filters/4000"`},
		{"import end", `{"end":3999`, `{"end":1999`},
		{"no ranges", `"ranges":[`, `"ranges":[],"x":[`},
		{"not json", `{`, `[`},
	} {
		b := strings.Replace(s, tc.from, tc.to, 1)
		if b == s {
			t.Fatalf("%s: nothing replaced", tc.name)
		}
		if _, err := ParseManifest([]byte(b)); !errors.Is(err, ErrBadManifest) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestFinal: which ranges are final under a tip and depth.
func TestFinal(t *testing.T) {
	for _, tc := range []struct {
		tip, depth, n uint32
	}{{0, 0, 0}, {1998, 0, 0}, {1999, 0, 1}, {2005, 6, 1}, {2004, 6, 0}, {5, 144, 0}, {4294967295, 0, 2147483}} {
		if n := FinalCount(tc.tip, tc.depth); n != tc.n {
			t.Errorf("FinalCount(%d, %d) = %d, want %d", tc.tip, tc.depth, n, tc.n)
		}
		for i := range min(tc.n+2, 5) {
			if Final(i*Size, tc.tip, tc.depth) != (i < tc.n) {
				t.Errorf("Final(%d, %d, %d) = %v", i*Size, tc.tip, tc.depth, !(i < tc.n))
			}
		}
	}
}

// FuzzParseManifest: no input panics, and a manifest that parses encodes
// and parses again to the same value.
func FuzzParseManifest(f *testing.F) {
	_, b := testManifest(2)
	m, _ := testManifest(1)
	f.Add(b)
	f.Add(LatestOf(&m, b).Encode())
	f.Add([]byte(`{"ranges":[{"objects":{}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseLatest(b)
		m, err := ParseManifest(b)
		if err != nil {
			return
		}
		if _, err := ParseManifest(m.Encode()); err != nil {
			t.Fatalf("re-encoded manifest fails: %v", err)
		}
	})
}

// TestParseManifestAllocations: parsing costs a small multiple of the
// input (encoding/json spends up to about 25 bytes per byte of many tiny
// maps), whatever counts or lengths it claims.
func TestParseManifestAllocations(t *testing.T) {
	_, b := testManifest(50)
	huge := []byte(`{"version":1,"ranges":[` + strings.Repeat(`{"objects":{"a":"b"}},`, 5000) + `{}]}`)
	for _, in := range [][]byte{b, huge, bytes.Repeat([]byte("["), 100000)} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, _ = ParseManifest(in)
		runtime.ReadMemStats(&after)
		if a := after.TotalAlloc - before.TotalAlloc; a > uint64(64<<10+32*len(in)) {
			t.Errorf("%d-byte input: %d bytes allocated", len(in), a)
		}
	}
	if _, err := ParseManifest(make([]byte, MaxManifestSize+1)); !errors.Is(err, ErrBadManifest) {
		t.Errorf("oversized manifest: %v", err)
	}
}
