package source

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// manifestJSON writes m as a publisher does (the contract's field names).
func manifestJSON(m Manifest) []byte {
	type jr struct {
		Start           uint32            `json:"start"`
		End             uint32            `json:"end"`
		EndBlockHash    string            `json:"end_block_hash"`
		EndFilterHeader string            `json:"end_filter_header"`
		Objects         map[string]string `json:"objects"`
	}
	type ji struct {
		End    uint32 `json:"end"`
		SHA256 string `json:"sha256"`
	}
	out := struct {
		Version   int           `json:"version"`
		Network   string        `json:"network"`
		Genesis   string        `json:"genesis"`
		RangeSize int           `json:"range_size"`
		Ranges    []jr          `json:"ranges"`
		Imports   map[string]ji `json:"imports,omitempty"`
	}{Version: 1, Network: m.Network, Genesis: m.Genesis.String(), RangeSize: RangeSize, Ranges: []jr{}}
	for _, r := range m.Ranges {
		objs := map[string]string{}
		for k, v := range r.Objects {
			objs[k] = v.String()
		}
		out.Ranges = append(out.Ranges, jr{r.Start, r.End, r.EndBlockHash.String(), r.EndFilterHeader.String(), objs})
	}
	if len(m.Imports) > 0 {
		out.Imports = map[string]ji{}
		for k, v := range m.Imports {
			out.Imports[k] = ji{v.End, v.SHA256.String()}
		}
	}
	b, _ := json.Marshal(out)
	return b
}

func sampleManifest(ranges int) Manifest {
	m := Manifest{Network: "regtest", Genesis: chainhash.DoubleHashH([]byte("genesis"))}
	for i := range ranges {
		start := uint32(i) * RangeSize
		r := Range{Start: start, End: start + RangeSize - 1, EndBlockHash: chainhash.DoubleHashH([]byte{byte(i)}),
			EndFilterHeader: chainhash.DoubleHashH([]byte{byte(i), 1}), Objects: map[string]Digest{}}
		for j, name := range []string{HeadersName(start), FilterHeadersName(start), FiltersName(start), fmt.Sprintf("sp/tweaks/0/%d", start)} {
			r.Objects[name] = sha256.Sum256([]byte{byte(i), byte(j)})
		}
		m.Ranges = append(m.Ranges, r)
	}
	if ranges > 0 {
		end := m.Ranges[ranges-1].End
		m.Imports = map[string]Import{HeadersImportName: {end, sha256.Sum256([]byte("h"))}, FilterHeadersImportName: {end, sha256.Sum256([]byte("f"))}}
	}
	return m
}

func TestDecodeManifest(t *testing.T) {
	good := manifestJSON(sampleManifest(3))
	m, err := DecodeManifest(good)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(manifestJSON(m), good) {
		t.Fatal("decode and encode do not round-trip")
	}
	bad := []struct{ name, from, to string }{
		{"version", `"version":1`, `"version":2`},
		{"range size", `"range_size":2000`, `"range_size":1000`},
		{"a gap", `"start":2000,"end":3999`, `"start":4000,"end":5999`},
		{"a short range", `"end":3999`, `"end":3998`},
		{"a short hash", `"end_block_hash":"`, `"end_block_hash":"0`},
		{"a non-hex digest", `"headers/0":"`, `"headers/0":"zz`},
		{"a missing object", `"filters/2000"`, `"filters/2001"`},
		{"an unknown import", `"headers/import/latest"`, `"headers/import/other"`},
		{"an empty network", `"network":"regtest"`, `"network":""`},
		{"not JSON", `{`, `[`},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			raw := strings.Replace(string(good), tc.from, tc.to, 1)
			if raw == string(good) {
				t.Fatalf("%q not in the manifest", tc.from)
			}
			if _, err := DecodeManifest([]byte(raw)); !errors.Is(err, ErrBadManifest) {
				t.Fatalf("err %v, want ErrBadManifest", err)
			}
		})
	}
}

func TestDecodeLatest(t *testing.T) {
	good := `{"version":1,"start":4000,"end":5999,"end_block_hash":"` + strings.Repeat("ab", 32) + `","end_filter_header":"` + strings.Repeat("cd", 32) + `","manifest_sha256":"` + strings.Repeat("01", 32) + `"}`
	l, err := DecodeLatest([]byte(good))
	if err != nil || l.Start != 4000 || l.End != 5999 || l.ManifestSHA256[0] != 1 {
		t.Fatalf("%+v, %v", l, err)
	}
	for _, tc := range [][2]string{{`"start":4000`, `"start":4001`}, {`"end":5999`, `"end":6000`}, {`"version":1`, `"version":0`}, {`"manifest_sha256":"01`, `"manifest_sha256":"`}} {
		if _, err := DecodeLatest([]byte(strings.Replace(good, tc[0], tc[1], 1))); !errors.Is(err, ErrBadManifest) {
			t.Errorf("%s: err %v", tc[1], err)
		}
	}
}

// FuzzDecodeManifest: any bytes decode or fail with ErrBadManifest, and
// what decodes re-encodes to a manifest that decodes to the same.
func FuzzDecodeManifest(f *testing.F) {
	f.Add(manifestJSON(sampleManifest(2)))
	f.Add(manifestJSON(sampleManifest(0)))
	f.Add([]byte(`{"version":1,"ranges":[{"start":0}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeManifest(b)
		if err != nil {
			if !errors.Is(err, ErrBadManifest) {
				t.Fatalf("error %v does not wrap ErrBadManifest", err)
			}
			return
		}
		again, err := DecodeManifest(manifestJSON(m))
		if err != nil || !bytes.Equal(manifestJSON(again), manifestJSON(m)) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// FuzzDecodeLatest: any bytes decode or fail with ErrBadManifest.
func FuzzDecodeLatest(f *testing.F) {
	f.Add([]byte(`{"version":1,"start":0,"end":1999,"end_block_hash":"` + strings.Repeat("ab", 32) + `","end_filter_header":"` + strings.Repeat("cd", 32) + `","manifest_sha256":"` + strings.Repeat("01", 32) + `"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := DecodeLatest(b)
		if err != nil {
			if !errors.Is(err, ErrBadManifest) {
				t.Fatalf("error %v does not wrap ErrBadManifest", err)
			}
			return
		}
		if l.Start%RangeSize != 0 || l.End != l.Start+RangeSize-1 {
			t.Fatalf("decoded a latest that is not a range: %+v", l)
		}
	})
}

// TestDecodeManifestAllocations: decoding costs a small multiple of the
// manifest's bytes, however many ranges or objects it declares.
func TestDecodeManifestAllocations(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  []byte
	}{
		{"honest, 500 ranges", manifestJSON(sampleManifest(500))},
		{"a huge declared array", []byte(`{"version":1,"network":"regtest","range_size":2000,"ranges":[` + strings.Repeat(`{},`, 100000) + `{}]}`)},
		{"many objects", []byte(`{"version":1,"ranges":[{"objects":{` + strings.Repeat(`"a":"b",`, 50000) + `"a":"b"}}]}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, _ = DecodeManifest(tc.raw)
			runtime.ReadMemStats(&after)
			if got := after.TotalAlloc - before.TotalAlloc; got > 40*uint64(len(tc.raw))+1<<20 {
				t.Fatalf("%d bytes allocated to decode %d bytes", got, len(tc.raw))
			}
		})
	}
}
