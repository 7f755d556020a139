package bitcoind

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/corefiles"
)

// blocksWithSpends counts the blocks of c that spend something (have more
// than a coinbase): the ones with an undo record to find.
func blocksWithSpends(t *testing.T, c *benchChain) int {
	t.Helper()
	n := 0
	for _, h := range c.hashes {
		b, err := scanBlock(c.raw[h], h)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.txids) > 1 {
			n++
		}
	}
	return n
}

// TestBlocksDirUndoSearchStartsAtTheRecord pins where the search for a
// block's undo record starts when its parent's record is not known (a
// worker's first block, its parent being another worker's): at the
// block's ordinal in its blk file, so exactly one undo record is read per
// block. The chain starts with many empty blocks and goes on with full
// ones, as mainnet's files (and cfbench's chain) do; every full block's
// record has the same transaction count, so a search started elsewhere
// reads and hashes the records in between. Blocks are fetched one at a
// time in a shuffled order, and by parallel workers in runs of two.
func TestBlocksDirUndoSearchStartsAtTheRecord(t *testing.T) {
	c := syntheticBenchChain(t, 40, 12, 50, corefiles.Options{Key: [8]byte{3, 1, 4, 1, 5, 9, 2, 6}})
	want := blocksWithSpends(t, c)
	if want < 10 {
		t.Fatalf("%d blocks with spends; the chain is too small to tell", want)
	}
	check := func(t *testing.T, fb FetchedBlock) {
		t.Helper()
		scripts, _ := spentFromREST(t, c.spent[fb.Hash])
		if !equalScripts(fb.PrevScripts, scripts) {
			t.Errorf("block %s: spent scripts differ", fb.Hash)
		}
	}

	t.Run("shuffled", func(t *testing.T) {
		d := openFixtureDir(t, c.dir)
		src := NewBlocksDirSource(d, nil, testLogger(t))
		order := rand.New(rand.NewPCG(7, 7)).Perm(len(c.hashes))
		for _, i := range order {
			got, err := src.FetchBlocks(testCtx(t), c.hashes[i:i+1], nil)
			if err != nil {
				t.Fatal(err)
			}
			check(t, got[0])
		}
		if n := d.undoReads.Load(); n != uint64(want) {
			t.Errorf("%d undo records read for %d blocks with spends", n, want)
		}
	})

	t.Run("parallel runs", func(t *testing.T) {
		d := openFixtureDir(t, c.dir)
		src := NewBlocksDirSource(d, nil, testLogger(t))
		runs := make(chan []chainhash.Hash)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for run := range runs {
					got, err := src.FetchBlocks(testCtx(t), run, nil)
					if err != nil {
						t.Error(err)
						return
					}
					for _, fb := range got {
						check(t, fb)
					}
				}
			})
		}
		for i := 0; i < len(c.hashes); i += 2 {
			runs <- c.hashes[i:min(i+2, len(c.hashes))]
		}
		close(runs)
		wg.Wait()
		if n := d.undoReads.Load(); n != uint64(want) {
			t.Errorf("%d undo records read for %d blocks with spends", n, want)
		}
	})
}

// TestBlocksDirRunsStopAtTheCap checks that a run of full blocks is read
// only up to the source's cap (3 MiB in production, lowered here), the
// first blocks coming back, and that asking for the rest, as the indexer
// does, returns every block once and right.
func TestBlocksDirRunsStopAtTheCap(t *testing.T) {
	c := syntheticBenchChain(t, 0, 10, 50, corefiles.Options{})
	src := NewBlocksDirSource(openFixtureDir(t, c.dir), nil, testLogger(t))
	src.runCap = 3 * len(c.raw[c.hashes[len(c.hashes)-1]]) // about three full blocks
	var calls, got int
	for run := c.hashes; len(run) > 0; calls++ {
		blocks, err := src.FetchBlocks(testCtx(t), run, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(blocks) == 0 {
			t.Fatal("no block returned")
		}
		held := 0
		for i, fb := range blocks {
			if fb.Hash != run[i] {
				t.Fatalf("block %d of the run is %s, want %s", i, fb.Hash, run[i])
			}
			scripts, _ := spentFromREST(t, c.spent[fb.Hash])
			if !equalScripts(fb.PrevScripts, scripts) {
				t.Fatalf("block %s: spent scripts differ", fb.Hash)
			}
			if i < len(blocks)-1 {
				held += len(fb.Raw)
			}
		}
		if held >= src.runCap {
			t.Errorf("a call returned %d blocks holding %d bytes before its last, cap %d", len(blocks), held, src.runCap)
		}
		got += len(blocks)
		run = run[len(blocks):]
	}
	if got != len(c.hashes) || calls < 3 {
		t.Errorf("%d blocks in %d calls for a run of %d", got, calls, len(c.hashes))
	}
}

// oneAtATime is a fallback RunBlockSource that answers the first block of
// every run only, from the chain's blocks and REST bodies, as the txindex
// source answers a prefix of a run that outgrows its cap.
type oneAtATime struct {
	t     *testing.T
	c     *benchChain
	calls int
}

func (s *oneAtATime) Mode() string { return "one-at-a-time" }

func (s *oneAtATime) FetchBlock(context.Context, chainhash.Hash) (*wire.MsgBlock, [][]byte, error) {
	return nil, nil, errors.New("FetchBlock not expected")
}

func (s *oneAtATime) FetchBlocks(_ context.Context, hashes []chainhash.Hash, _ *RunTurn) ([]FetchedBlock, error) {
	s.calls++
	b, err := scanBlock(s.c.raw[hashes[0]], hashes[0])
	if err != nil {
		return nil, err
	}
	scripts, _ := spentFromREST(s.t, s.c.spent[hashes[0]])
	return []FetchedBlock{{Header: b.header, Hash: b.hash, OutputScripts: b.outs, PrevScripts: scripts, Raw: b.raw}}, nil
}

// TestBlocksDirFallbackRunsInParts checks that blocks missing from the
// files are all fetched when the fallback returns runs in parts.
func TestBlocksDirFallbackRunsInParts(t *testing.T) {
	c := syntheticBenchChain(t, 0, 6, 20, corefiles.Options{})
	// A directory that holds the first three blocks only.
	short := t.TempDir()
	params := &chaincfg.RegressionNetParams
	w, err := corefiles.NewWriter(short, params, corefiles.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddBlock(params.GenesisBlock); err != nil {
		t.Fatal(err)
	}
	for _, h := range c.hashes[:3] {
		var blk wire.MsgBlock
		if err := blk.Deserialize(bytes.NewReader(c.raw[h])); err != nil {
			t.Fatal(err)
		}
		if err := w.AddBlock(&blk); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fallback := &oneAtATime{t: t, c: c}
	src := NewBlocksDirSource(openFixtureDir(t, short), fallback, testLogger(t))
	got, err := src.FetchBlocks(testCtx(t), c.hashes, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(c.hashes) {
		t.Fatalf("%d blocks for %d", len(got), len(c.hashes))
	}
	for i, fb := range got {
		scripts, _ := spentFromREST(t, c.spent[c.hashes[i]])
		if fb.Hash != c.hashes[i] || !equalScripts(fb.PrevScripts, scripts) {
			t.Errorf("block %d: %s, spent scripts equal: %v", i, fb.Hash, equalScripts(fb.PrevScripts, scripts))
		}
	}
	if files, fallbacks := src.BlockCounts(); files != 3 || fallbacks != uint64(len(c.hashes)-3) || fallback.calls != len(c.hashes)-3 {
		t.Errorf("%d blocks from the files, %d from the fallback in %d calls", files, fallbacks, fallback.calls)
	}
}
