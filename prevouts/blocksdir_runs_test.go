package prevouts

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/corefiles"
	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// TestBlocksDirRunsStopAtTheCap checks that a run of full blocks is read
// only up to the source's cap (3 MiB in production, lowered here), the
// first blocks coming back, and that asking for the rest, as the indexer
// does, returns every block once and right.
func TestBlocksDirRunsStopAtTheCap(t *testing.T) {
	c := corefiles.SyntheticChain(t, 0, 10, 50, corefiles.Options{})
	src := NewBlocksDirSource(openFixtureDir(t, c.Dir), nil, testLogger(t))
	src.runCap = 3 * len(c.Raw[c.Hashes[len(c.Hashes)-1]]) // about three full blocks
	var calls, got int
	for run := c.Hashes; len(run) > 0; calls++ {
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
			scripts, _ := spentFromREST(t, c.Spent[fb.Hash])
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
	if got != len(c.Hashes) || calls < 3 {
		t.Errorf("%d blocks in %d calls for a run of %d", got, calls, len(c.Hashes))
	}
}

// oneAtATime is a fallback RunBlockSource that answers the first block of
// every run only, from the chain's blocks and REST bodies, as the txindex
// source answers a prefix of a run that outgrows its cap.
type oneAtATime struct {
	t     *testing.T
	c     *corefiles.Chain
	calls int
}

func (s *oneAtATime) Mode() string { return "one-at-a-time" }

func (s *oneAtATime) FetchBlock(context.Context, chainhash.Hash) (*wire.MsgBlock, [][]byte, error) {
	return nil, nil, errors.New("FetchBlock not expected")
}

func (s *oneAtATime) FetchBlocks(_ context.Context, hashes []chainhash.Hash, _ *RunTurn) ([]FetchedBlock, error) {
	s.calls++
	b, err := wirescan.ScanBlock(s.c.Raw[hashes[0]], hashes[0])
	if err != nil {
		return nil, err
	}
	scripts, _ := spentFromREST(s.t, s.c.Spent[hashes[0]])
	return []FetchedBlock{{Header: b.Header, Hash: b.Hash, OutputScripts: b.Outs, PrevScripts: scripts, Raw: b.Raw}}, nil
}

// TestBlocksDirFallbackRunsInParts checks that blocks missing from the
// files are all fetched when the fallback returns runs in parts.
func TestBlocksDirFallbackRunsInParts(t *testing.T) {
	c := corefiles.SyntheticChain(t, 0, 6, 20, corefiles.Options{})
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
	for _, h := range c.Hashes[:3] {
		var blk wire.MsgBlock
		if err := blk.Deserialize(bytes.NewReader(c.Raw[h])); err != nil {
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
	got, err := src.FetchBlocks(testCtx(t), c.Hashes, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(c.Hashes) {
		t.Fatalf("%d blocks for %d", len(got), len(c.Hashes))
	}
	for i, fb := range got {
		scripts, _ := spentFromREST(t, c.Spent[c.Hashes[i]])
		if fb.Hash != c.Hashes[i] || !equalScripts(fb.PrevScripts, scripts) {
			t.Errorf("block %d: %s, spent scripts equal: %v", i, fb.Hash, equalScripts(fb.PrevScripts, scripts))
		}
	}
	if files, fallbacks := src.BlockCounts(); files != 3 || fallbacks != uint64(len(c.Hashes)-3) || fallback.calls != len(c.Hashes)-3 {
		t.Errorf("%d blocks from the files, %d from the fallback in %d calls", files, fallbacks, fallback.calls)
	}
}
