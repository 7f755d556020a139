package corefiles

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/v2"
)

// Writing the fixture's own blocks, in the order Core stored them (the
// stale branch 197–199 before the replacement 197–200) and with its key,
// reproduces Core's files byte for byte: blk00000.dat equal to Core's
// original 16 MiB file (SHA-256 in chain.json; the fixture keeps only its
// used part), rev00000.dat equal to the fixture's, 1 MiB padding included,
// and every block and undo position equal to Core's block index.
func TestWriterReproducesCoreFixture(t *testing.T) {
	fx := LoadFixture(t)
	blocks, err := fx.StoredBlocks()
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != len(fx.Blocks) {
		t.Fatalf("%d stored blocks, chain.json lists %d", len(blocks), len(fx.Blocks))
	}
	dir := t.TempDir()
	locs, err := Write(dir, fx.Params, blocks, Options{Key: fx.Key})
	if err != nil {
		t.Fatal(err)
	}

	gotBlk, err := os.ReadFile(filepath.Join(dir, "blk00000.dat"))
	if err != nil {
		t.Fatal(err)
	}
	wantBlk, err := os.ReadFile(filepath.Join(fx.BlocksDir, "blk00000.dat"))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(gotBlk)) != fx.OriginalBlkSize {
		t.Errorf("blk00000.dat: %d bytes, Core's was %d", len(gotBlk), fx.OriginalBlkSize)
	}
	if sum := sha256.Sum256(gotBlk); hex.EncodeToString(sum[:]) != fx.OriginalBlkSHA256 {
		t.Errorf("blk00000.dat: SHA-256 %x, Core's original %s", sum, fx.OriginalBlkSHA256)
	}
	if !bytes.Equal(gotBlk[:min(len(gotBlk), len(wantBlk))], wantBlk) {
		t.Errorf("blk00000.dat differs from the fixture within its used part")
	}

	gotRev, err := os.ReadFile(filepath.Join(dir, "rev00000.dat"))
	if err != nil {
		t.Fatal(err)
	}
	wantRev, err := os.ReadFile(filepath.Join(fx.BlocksDir, "rev00000.dat"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotRev, wantRev) {
		at := 0
		for at < min(len(gotRev), len(wantRev)) && gotRev[at] == wantRev[at] {
			at++
		}
		t.Errorf("rev00000.dat: %d bytes, fixture %d; first difference at %d", len(gotRev), len(wantRev), at)
	}
	gotKey, err := os.ReadFile(filepath.Join(dir, "xor.dat"))
	if err != nil || !bytes.Equal(gotKey, fx.Key[:]) {
		t.Errorf("xor.dat: %x, %v", gotKey, err)
	}

	for i, loc := range locs {
		want := fx.Blocks
		b, ok := fx.Block(loc.Hash)
		if !ok {
			t.Fatalf("record %d: block %s not in chain.json (%d blocks)", i, loc.Hash, len(want))
		}
		if loc.Height != b.Height || loc.File != b.File || loc.DataPos != b.DataPos {
			t.Errorf("block %s: written at height %d file %d pos %d; Core's index %d, %d, %d", loc.Hash, loc.Height, loc.File, loc.DataPos, b.Height, b.File, b.DataPos)
		}
		if b.Height > 0 && loc.UndoPos != b.UndoPos {
			t.Errorf("block %s: undo at %d, Core's index %d", loc.Hash, loc.UndoPos, b.UndoPos)
		}
	}
}

// Core's amount compression round-trips and matches the values its
// comments give.
func TestCompressAmount(t *testing.T) {
	for _, tc := range []struct{ in, out uint64 }{
		{0, 0}, {1, 1}, {1000000, 7}, {100000000, 9}, {5000000000, 50}, {2100000000000000, 21000000},
	} {
		if got := CompressAmount(tc.in); got != tc.out {
			t.Errorf("CompressAmount(%d) = %d, want %d", tc.in, got, tc.out)
		}
	}
}

// Core's VARINT examples from serialize.h's comment.
func TestAppendVarInt(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		want string
	}{
		{0, "00"}, {1, "01"}, {127, "7f"}, {128, "8000"}, {255, "807f"}, {256, "8100"},
		{16383, "fe7f"}, {16384, "ff00"}, {16511, "ff7f"}, {65535, "82fe7f"}, {1 << 32, "8efefeff00"},
	} {
		if got := hex.EncodeToString(AppendVarInt(nil, tc.n)); got != tc.want {
			t.Errorf("VARINT(%d) = %s, want %s", tc.n, got, tc.want)
		}
	}
}

// A chain split over several file pairs: each block goes to the next file
// when its record would reach the maximum (a block larger than that gets a
// file of its own), the files left behind end at
// their last record and the last pair keeps its preallocated zeros.
func TestWriterSplitsFiles(t *testing.T) {
	fx := LoadFixture(t)
	blocks, err := fx.StoredBlocks()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const maxSize = 20000
	w, err := NewWriter(dir, &chaincfg.RegressionNetParams, Options{MaxFileSize: maxSize, BlockChunk: 16 << 10, UndoChunk: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		if err := w.AddBlock(b); err != nil {
			t.Fatal(err)
		}
	}
	files := w.Files()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if files < 5 {
		t.Fatalf("%d files for %d blocks of up to %d bytes a file", files, len(blocks), maxSize)
	}
	perFile := map[int]int{}
	for _, loc := range w.Locations() {
		perFile[loc.File]++
	}
	for n := range files {
		st, err := os.Stat(filepath.Join(dir, fmt.Sprintf("blk%05d.dat", n)))
		if err != nil {
			t.Fatal(err)
		}
		if perFile[n] == 0 {
			t.Errorf("file %d holds no block", n)
		}
		last := n == files-1
		if !last && st.Size() >= maxSize && perFile[n] > 1 {
			t.Errorf("blk%05d.dat: %d bytes, at or over the maximum %d", n, st.Size(), maxSize)
		}
		if last && st.Size()%(16<<10) != 0 {
			t.Errorf("last blk file: %d bytes, not preallocated in chunks", st.Size())
		}
	}
}
