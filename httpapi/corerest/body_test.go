package corerest

import (
	"bytes"
	"net/http"
	"runtime"
	"strconv"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

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
// it (what httpapi's MemoryBound assumes of an answer held for a slow
// client).
func TestCoreBodyEncodesAsItWrites(t *testing.T) {
	filter := bytes.Repeat([]byte{0xab}, wire.MaxCFilterDataSize)
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
