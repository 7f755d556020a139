// Package layouttest builds the published layout of issue 20 (headers,
// filter headers and filters of each range, manifest.json, latest) from
// ranges' bytes, and serves it over HTTP with hooks to damage it, for the
// tests of the replica: what a publisher would write, written here from
// the contract (docs/deployment.md) so that the replica's tests do not
// depend on the publisher's code.
//
// It must not be used outside tests and benchmarks.
package layouttest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// RangeSize is the layout's range size.
const RangeSize = 2000

// Range is one range's three objects as a publisher writes them.
type Range struct {
	Start         uint32
	Headers       []byte // 2,000 80-byte headers
	FilterHeaders []byte // 2,000 32-byte filter headers
	Filters       []byte // 2,000 CompactSize-prefixed filters
}

// Layout is a published layout: object name to bytes.
type Layout map[string][]byte

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Build writes the layout of ranges (ascending from 0) of network with
// genesis: each range's objects, manifest.json and latest. It does not
// write the neutrino import files.
func Build(tb testing.TB, network string, genesis chainhash.Hash, ranges []Range) Layout {
	tb.Helper()
	l := Layout{}
	type jsonRange struct {
		Start           uint32            `json:"start"`
		End             uint32            `json:"end"`
		EndBlockHash    string            `json:"end_block_hash"`
		EndFilterHeader string            `json:"end_filter_header"`
		Objects         map[string]string `json:"objects"`
	}
	manifest := struct {
		Version   int         `json:"version"`
		Network   string      `json:"network"`
		Genesis   string      `json:"genesis"`
		RangeSize int         `json:"range_size"`
		Ranges    []jsonRange `json:"ranges"`
	}{Version: 1, Network: network, Genesis: genesis.String(), RangeSize: RangeSize, Ranges: []jsonRange{}}
	for i, r := range ranges {
		if r.Start != uint32(i)*RangeSize || len(r.Headers) != 80*RangeSize || len(r.FilterHeaders) != 32*RangeSize {
			tb.Fatalf("layouttest: range %d is not a whole range at %d", r.Start, i*RangeSize)
		}
		s := strconv.FormatUint(uint64(r.Start), 10)
		l["headers/"+s], l["filter-headers/"+s], l["filters/"+s] = r.Headers, r.FilterHeaders, r.Filters
		endHash := chainhash.DoubleHashH(r.Headers[len(r.Headers)-80:])
		endFH := chainhash.Hash(r.FilterHeaders[len(r.FilterHeaders)-32:])
		manifest.Ranges = append(manifest.Ranges, jsonRange{
			Start: r.Start, End: r.Start + RangeSize - 1, EndBlockHash: endHash.String(), EndFilterHeader: endFH.String(),
			Objects: map[string]string{"headers/" + s: sum(r.Headers), "filter-headers/" + s: sum(r.FilterHeaders), "filters/" + s: sum(r.Filters)},
		})
	}
	raw, err := json.Marshal(manifest)
	if err != nil {
		tb.Fatal(err)
	}
	l.setManifest(tb, raw)
	return l
}

// setManifest stores raw as manifest.json and rewrites latest to name it.
func (l Layout) setManifest(tb testing.TB, raw []byte) {
	l["manifest.json"] = raw
	var m struct {
		Ranges []struct {
			Start           uint32 `json:"start"`
			End             uint32 `json:"end"`
			EndBlockHash    string `json:"end_block_hash"`
			EndFilterHeader string `json:"end_filter_header"`
		} `json:"ranges"`
	}
	if err := json.Unmarshal(raw, &m); err != nil || len(m.Ranges) == 0 {
		tb.Fatalf("layouttest: manifest without ranges: %v", err)
	}
	last := m.Ranges[len(m.Ranges)-1]
	latest, err := json.Marshal(map[string]any{
		"version": 1, "start": last.Start, "end": last.End, "end_block_hash": last.EndBlockHash,
		"end_filter_header": last.EndFilterHeader, "manifest_sha256": sum(raw),
	})
	if err != nil {
		tb.Fatal(err)
	}
	l["latest"] = latest
}

// Republish replaces object name with b and rewrites the manifest's hash
// of it (and latest), as a publisher that hashed damaged bytes would: the
// damage is then only visible to the chain checks.
func (l Layout) Republish(tb testing.TB, name string, b []byte) {
	tb.Helper()
	l[name] = b
	var m map[string]any
	if err := json.Unmarshal(l["manifest.json"], &m); err != nil {
		tb.Fatal(err)
	}
	for _, r := range m["ranges"].([]any) {
		objects := r.(map[string]any)["objects"].(map[string]any)
		if _, ok := objects[name]; ok {
			objects[name] = sum(b)
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	l.setManifest(tb, out)
}

// Flip returns a copy of b with byte i's lowest bit flipped.
func Flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 1
	return c
}

// Server serves a Layout under /prefix like a bucket's public endpoint
// (404 for what it does not hold) and counts the requests of each object.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	layout   Layout
	requests map[string]int
}

// Serve starts a Server of l (which it keeps; Set changes it) below
// prefix; ending the test stops it.
func Serve(tb testing.TB, l Layout, prefix string) *Server {
	s := &Server{layout: l, requests: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := strings.CutPrefix(r.URL.Path, prefix+"/")
		s.mu.Lock()
		b, have := s.layout[name]
		s.requests[name]++
		s.mu.Unlock()
		if !ok || !have || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		_, _ = w.Write(b)
	}))
	tb.Cleanup(s.Close)
	return s
}

// Set replaces object name's bytes.
func (s *Server) Set(name string, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.layout[name] = b
}

// Requests returns how often name was asked for.
func (s *Server) Requests(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[name]
}
