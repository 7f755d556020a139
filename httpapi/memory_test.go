package httpapi

import (
	"bytes"
	"net/http"
	"runtime"
	"strconv"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// The HTTP bound with the defaults, and each cap moves it by its share.
func TestMemoryBoundDefaults(t *testing.T) {
	def := MemoryBound(Config{})
	if got := def >> 20; got < 400 || got > 500 {
		t.Fatalf("default HTTP bound %d MiB, documented as about 460", got)
	}
	perConn := int64(connFixed + DefaultMaxHeaderBytes + largestAnswer)
	if more := MemoryBound(Config{MaxConns: DefaultMaxConns + 10}); more-def != 10*perConn {
		t.Errorf("10 more connections add %d bytes, want %d", more-def, 10*perConn)
	}
	if fewer := MemoryBound(Config{MaxBulkInFlight: 2}); def-fewer != 6*bulkChunk {
		t.Errorf("6 fewer bulk downloads save %d bytes, want %d", def-fewer, 6*bulkChunk)
	}
	// An answer is never built beyond its raw bytes: the largest raw
	// answers are what the bound holds per connection.
	if largestAnswer < largestFilter || largestAnswer < 2000*blockHeaderSize {
		t.Errorf("largest answer %d below a filter of %d or 2,000 headers", largestAnswer, largestFilter)
	}
}

// discardWriter is a ResponseWriter that drops the body.
type discardWriter struct {
	h http.Header
	n int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Write(p []byte) (int, error) { d.n += len(p); return len(p), nil }

// The hex and JSON forms of an answer are encoded as they are written:
// writing a 256 KiB filter in any form allocates a few KiB, not copies of
// it (what MemoryBound assumes of an answer held for a slow client).
func TestCoreBodyEncodesAsItWrites(t *testing.T) {
	filter := bytes.Repeat([]byte{0xab}, largestFilter)
	prefix := blockFilterPrefix(chainhash.Hash{1}, filter)
	hashes := bytes.Repeat([]byte{0xcd}, 2000*chainhash.HashSize)
	for _, tc := range []struct {
		name  string
		f     restFormat
		parts [][]byte
		js    jsonBody
		size  int
	}{
		{"filter .bin", formatBin, [][]byte{prefix, filter}, nil, len(prefix) + len(filter)},
		{"filter .hex", formatHex, [][]byte{prefix, filter}, nil, 2*(len(prefix)+len(filter)) + 1},
		{"filter .json", formatJSON, nil, jsonHexField{"filter", filter}, len(`{"filter":""}`) + 2*len(filter) + 1},
		{"filter headers .json", formatJSON, nil, jsonHashArray(hashes), 2 + 2000*66 + 1999 + 1},
	} {
		w := &discardWriter{h: http.Header{}}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		writeCoreBody(w, tc.f, tc.parts, tc.js)
		runtime.ReadMemStats(&after)
		if w.n != tc.size || w.h.Get("Content-Length") != strconv.Itoa(tc.size) {
			t.Errorf("%s: wrote %d bytes, Content-Length %s, want %d", tc.name, w.n, w.h.Get("Content-Length"), tc.size)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<10 {
			t.Errorf("%s: %d bytes allocated to write %d", tc.name, alloc, w.n)
		}
	}
}
