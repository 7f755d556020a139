package gcs_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/cfindexd/cfindexd/gcs"
	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/internal/testvectors"
)

// TestBIP158Vectors rebuilds every official BIP-158 basic filter from its
// block and spent scripts, and chains its filter header, byte for byte.
func TestBIP158Vectors(t *testing.T) {
	vectors := testvectors.LoadBIP158(t)
	if len(vectors) != 10 {
		t.Fatalf("got %d vectors, want the 10 of BIP-158", len(vectors))
	}
	var b gcs.BasicBuilder // one builder reused across blocks, as the indexer does
	for _, v := range vectors {
		t.Run(fmt.Sprintf("height_%d", v.Height), func(t *testing.T) {
			b.Reset()
			if err := gcs.AddBasicElements(&b, v.Block, v.PrevScripts); err != nil {
				t.Fatalf("height %d: %v", v.Height, err)
			}
			filter := b.AppendFilter(nil, v.BlockHash)
			if !bytes.Equal(filter, v.Filter) {
				t.Fatalf("height %d: filter\n%x\nwant\n%x", v.Height, filter, v.Filter)
			}
			if got := headers.FilterHeader(filter, v.PrevHeader); got != v.Header {
				t.Fatalf("height %d: header %s, want %s", v.Height, got, v.Header)
			}
			// Every element the block contributes must match its filter.
			for _, el := range basicElements(v.Block, v.PrevScripts) {
				ok, err := gcs.MatchBasic(filter, v.BlockHash, [][]byte{el})
				if err != nil || !ok {
					t.Fatalf("height %d: element %x: match %v, %v", v.Height, el, ok, err)
				}
			}
		})
	}
}
