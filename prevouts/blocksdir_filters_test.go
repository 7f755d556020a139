package prevouts_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/blockfiles"
	"github.com/cfindexd/cfindexd/gcs"
	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/internal/corefiles"
	"github.com/cfindexd/cfindexd/prevouts"
)

// For every block of Core's v31 blocks directory — the 201 active ones and
// the three of the stale branch — the blocks-dir source, fetching runs of
// consecutive blocks as the indexer does, yields exactly the basic filter
// and filter header Core's own blockfilterindex produced.
func TestBlocksDirSourceGivesCoreFilters(t *testing.T) {
	fx := corefiles.LoadFixture(t)
	dir, err := blockfiles.Open(fx.BlocksDir, fx.Params.Net, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	src := prevouts.NewBlocksDirSource(dir, nil, zerolog.Nop())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Runs of up to 16 blocks in chain.json order (by height, the stale
	// branch among them), several workers' worth at once.
	got := map[chainhash.Hash]prevouts.FetchedBlock{}
	for start := 0; start < len(fx.Blocks); start += 16 {
		end := min(start+16, len(fx.Blocks))
		var hashes []chainhash.Hash
		for _, b := range fx.Blocks[start:end] {
			hashes = append(hashes, b.Hash)
		}
		run, err := src.FetchBlocks(ctx, hashes, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, fb := range run {
			got[fb.Hash] = fb
		}
	}

	var builder gcs.BasicBuilder
	filterHeaders := map[chainhash.Hash]chainhash.Hash{}
	for _, b := range fx.Blocks { // by height: a parent's header comes first
		fb, ok := got[b.Hash]
		if !ok {
			t.Fatalf("h%d %s not fetched", b.Height, b.Hash)
		}
		builder.Reset()
		gcs.AddBasicScripts(&builder, fb.OutputScripts, fb.PrevScripts)
		filter := builder.AppendFilter(nil, b.Hash)
		if !bytes.Equal(filter, b.Filter) {
			t.Errorf("h%d %s (active %v): filter differs from Core's", b.Height, b.Hash, b.Active)
		}
		header := headers.FilterHeader(filter, filterHeaders[b.Prev])
		if header != b.FilterHeader {
			t.Errorf("h%d %s (active %v): filter header %s, Core's %s", b.Height, b.Hash, b.Active, header, b.FilterHeader)
		}
		filterHeaders[b.Hash] = header
	}
	if files, fallback := src.BlockCounts(); files != 204 || fallback != 0 {
		t.Errorf("%d blocks from the files, %d from a fallback; want 204 and 0", files, fallback)
	}
}
