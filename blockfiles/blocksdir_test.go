package blockfiles

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/corefiles"
	"github.com/cfindexd/cfindexd/internal/wirescan"
	"github.com/cfindexd/cfindexd/nodeclient"
)

func openFixtureDir(t testing.TB, dir string) *Dir {
	t.Helper()
	d, err := Open(dir, chaincfg.RegressionNetParams.Net, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// spentFromREST flattens a recorded spenttxouts body into scripts and
// values in the indexer's order.
func spentFromREST(t testing.TB, body []byte) ([][]byte, []int64) {
	t.Helper()
	txs, err := nodeclient.DecodeSpentTxOuts(body)
	if err != nil {
		t.Fatal(err)
	}
	var scripts [][]byte
	var values []int64
	for _, tx := range txs {
		for _, o := range tx {
			scripts = append(scripts, o.PkScript)
			values = append(values, o.Value)
		}
	}
	return scripts, values
}

// Every block of Core's v31 blocks directory, the stale branch included,
// is read from the obfuscated files with Core's bytes (size and SHA-256 of
// getblock 0), at Core's block-index position, and its undo record — found
// by checksum, and for the two children of block 196 by shape — decodes to
// exactly the spent outputs Core served over REST: every script
// (compressed types 0–5 expanded, P2PK keys decompressed) and every amount.
func TestBlocksDirReadsEveryFixtureBlock(t *testing.T) {
	fx := corefiles.LoadFixture(t)
	d := openFixtureDir(t, fx.BlocksDir)
	if !d.Obfuscated() {
		t.Fatal("fixture's xor.dat not read")
	}
	first, err := d.FirstBlockHash()
	if err != nil || first != *fx.Params.GenesisHash {
		t.Fatalf("first block %s, %v; want regtest genesis", first, err)
	}
	ctx := testCtx(t)
	coins := 0
	for _, fb := range fx.Blocks {
		b, loc, err := d.ReadBlock(ctx, fb.Hash)
		if err != nil {
			t.Fatalf("h%d %s: %v", fb.Height, fb.Hash, err)
		}
		sum := sha256.Sum256(b.Raw)
		if len(b.Raw) != fb.BlockSize || hex.EncodeToString(sum[:]) != fb.BlockSHA256 {
			t.Errorf("h%d: %d bytes, sha256 %x; Core's %d, %s", fb.Height, len(b.Raw), sum, fb.BlockSize, fb.BlockSHA256)
		}
		if loc.file != fb.File || int64(loc.off)+recordHeaderSize != fb.DataPos {
			t.Errorf("h%d: record in file %d at %d, Core's index says data at %d", fb.Height, loc.file, loc.off, fb.DataPos)
		}
		prev, err := d.ReadUndo(ctx, b, loc)
		if err != nil {
			t.Fatalf("h%d %s: undo: %v", fb.Height, fb.Hash, err)
		}
		wantScripts, wantValues := spentFromREST(t, fb.SpentTxOuts)
		if !equalScripts(prev, wantScripts) {
			t.Fatalf("h%d %s: spent scripts differ from Core's spenttxouts", fb.Height, fb.Hash)
		}
		if len(b.Txids) == 1 {
			continue
		}
		// The amounts too, from the record the source chose.
		pos := d.hints[fb.Hash]
		rec := d.rev[pos.file].recs[pos.idx]
		if int64(rec.off)+recordHeaderSize != fb.UndoPos {
			t.Errorf("h%d: undo record at %d, Core's index says %d", fb.Height, rec.off, fb.UndoPos)
		}
		payload, ok := d.readUndoRecord(pos.file, rec, b.Header.PrevBlock)
		if !ok {
			t.Fatalf("h%d: chosen undo record fails its checksum", fb.Height)
		}
		undo, err := decodeBlockUndo(payload)
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		for _, tx := range undo {
			for _, c := range tx {
				if int64(c.Value) != wantValues[i] || !bytes.Equal(c.Script, wantScripts[i]) {
					t.Fatalf("h%d coin %d: %d sat, Core's %d", fb.Height, i, c.Value, wantValues[i])
				}
				i++
				coins++
			}
		}
	}
	if coins != 1823 {
		t.Errorf("%d spent coins decoded, the manifest counts 1,823", coins)
	}
}

// blocksWithSpends counts the blocks of c that spend something (have more
// than a coinbase): the ones with an undo record to find.
func blocksWithSpends(t *testing.T, c *corefiles.Chain) int {
	t.Helper()
	n := 0
	for _, h := range c.Hashes {
		b, err := wirescan.ScanBlock(c.Raw[h], h)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Txids) > 1 {
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
	c := corefiles.SyntheticChain(t, 40, 12, 50, corefiles.Options{Key: [8]byte{3, 1, 4, 1, 5, 9, 2, 6}})
	want := blocksWithSpends(t, c)
	if want < 10 {
		t.Fatalf("%d blocks with spends; the chain is too small to tell", want)
	}
	// fetch reads a block and its spent scripts as the blocks-directory
	// prevout source does, and checks them.
	fetch := func(t *testing.T, d *Dir, h chainhash.Hash) error {
		t.Helper()
		b, loc, err := d.ReadBlock(testCtx(t), h)
		if err != nil {
			return err
		}
		prev, err := d.ReadUndo(testCtx(t), b, loc)
		if err != nil {
			return err
		}
		scripts, _ := spentFromREST(t, c.Spent[h])
		if !equalScripts(prev, scripts) {
			t.Errorf("block %s: spent scripts differ", h)
		}
		return nil
	}

	t.Run("shuffled", func(t *testing.T) {
		d := openFixtureDir(t, c.Dir)
		order := rand.New(rand.NewPCG(7, 7)).Perm(len(c.Hashes))
		for _, i := range order {
			if err := fetch(t, d, c.Hashes[i]); err != nil {
				t.Fatal(err)
			}
		}
		if n := d.undoReads.Load(); n != uint64(want) {
			t.Errorf("%d undo records read for %d blocks with spends", n, want)
		}
	})

	t.Run("parallel runs", func(t *testing.T) {
		d := openFixtureDir(t, c.Dir)
		runs := make(chan []chainhash.Hash)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for run := range runs {
					for _, h := range run {
						if err := fetch(t, d, h); err != nil {
							t.Error(err)
							return
						}
					}
				}
			})
		}
		for i := 0; i < len(c.Hashes); i += 2 {
			runs <- c.Hashes[i:min(i+2, len(c.Hashes))]
		}
		close(runs)
		wg.Wait()
		if n := d.undoReads.Load(); n != uint64(want) {
			t.Errorf("%d undo records read for %d blocks with spends", n, want)
		}
	})
}

func equalScripts(a, b [][]byte) bool { return slices.EqualFunc(a, b, bytes.Equal) }

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
