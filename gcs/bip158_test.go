package gcs

import (
	"bytes"
	"testing"

	"github.com/cfindexd/cfindexd/internal/testvectors"
)

// Every official BIP-158 filter decodes, and re-encodes to the same bytes
// both with and without the N prefix.
func TestBIP158VectorsRoundTrip(t *testing.T) {
	for _, v := range testvectors.LoadBIP158(t) {
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
