package gcs

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
)

type bip158Vector struct {
	Height int
	Filter []byte
	Notes  string
}

// loadBIP158Filters returns the height, basic filter (wire form) and notes
// of every vector in testdata/bip158/testnet-19.json.
func loadBIP158Filters(tb testing.TB) []bip158Vector {
	tb.Helper()
	raw, err := os.ReadFile("../testdata/bip158/testnet-19.json")
	if err != nil {
		tb.Fatal(err)
	}
	var rows [][]any
	if err := json.Unmarshal(raw, &rows); err != nil {
		tb.Fatal(err)
	}
	var out []bip158Vector
	for _, row := range rows {
		if len(row) < 8 {
			continue // the header row
		}
		h, ok := row[0].(float64)
		if !ok {
			tb.Fatalf("bad height in %v", row[0])
		}
		fs, _ := row[5].(string)
		fb, err := hex.DecodeString(fs)
		if err != nil {
			tb.Fatalf("height %v: filter hex: %v", h, err)
		}
		notes, _ := row[7].(string)
		out = append(out, bip158Vector{Height: int(h), Filter: fb, Notes: notes})
	}
	if len(out) == 0 {
		tb.Fatal("no BIP-158 vectors")
	}
	return out
}

// Every official BIP-158 filter decodes, and re-encodes to the same bytes
// both with and without the N prefix.
func TestBIP158VectorsRoundTrip(t *testing.T) {
	for _, v := range loadBIP158Filters(t) {
		f, err := NewFilterWithN(BasicParams, v.Filter)
		if err != nil {
			t.Fatalf("height %d (%s): %v", v.Height, v.Notes, err)
		}
		if !bytes.Equal(f.BytesWithN(), v.Filter) {
			t.Fatalf("height %d: re-encoded %x, want %x", v.Height, f.BytesWithN(), v.Filter)
		}
		g, err := NewFilter(f.N(), BasicParams, f.Bytes())
		if err != nil {
			t.Fatalf("height %d: bare stream: %v", v.Height, err)
		}
		if !bytes.Equal(g.BytesWithN(), v.Filter) {
			t.Fatalf("height %d: bare round trip differs", v.Height)
		}
		if f.Params() != BasicParams {
			t.Fatalf("params %v", f.Params())
		}
	}
}
