package prevouts

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/blockfiles"
	"github.com/cfindexd/cfindexd/internal/corefiles"
	"github.com/cfindexd/cfindexd/internal/wirescan"
	"github.com/cfindexd/cfindexd/nodeclient"
)

func openFixtureDir(t testing.TB, dir string) *blockfiles.Dir {
	t.Helper()
	d, err := blockfiles.Open(dir, chaincfg.RegressionNetParams.Net, zerolog.Nop())
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

// countingSource is a fallback that serves from another source and counts
// what it was asked.
type countingSource struct {
	BlockSource
	blocks atomic.Int64
}

func (c *countingSource) FetchBlock(ctx context.Context, h chainhash.Hash) (*wire.MsgBlock, [][]byte, error) {
	c.blocks.Add(1)
	return c.BlockSource.FetchBlock(ctx, h)
}

// copyFixture copies the fixture's blocks directory (blk, rev, xor) to a
// temporary directory.
func copyFixture(t *testing.T, fx *corefiles.Fixture) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"blk00000.dat", "rev00000.dat", "xor.dat"} {
		raw, err := os.ReadFile(filepath.Join(fx.BlocksDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// truncateFile cuts path to size, keeping what was cut.
func truncateFile(t *testing.T, path string, size int64) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
	return raw[size:]
}

// writeAt writes b at off of path (Core appending a record it had not
// written yet).
func writeAt(t *testing.T, path string, b []byte, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// A block whose records are not in the files yet — its blk record cut
// short, not written at all (zero padding where it goes), or its undo
// record cut short — comes from the fallback source, once; when Core has
// written it, the same source reads it from the files.
func TestBlocksDirFallsBackUntilRecordsAreWritten(t *testing.T) {
	fx := corefiles.LoadFixture(t)
	tip, _ := fx.Block(fx.Tip)
	orig := NewBlocksDirSource(openFixtureDir(t, fx.BlocksDir), nil, zerolog.Nop())
	wantScripts, _ := spentFromREST(t, tip.SpentTxOuts)
	tipRecord := tip.DataPos - recordHeaderSize
	tipUndoRecord := tip.UndoPos - recordHeaderSize

	for _, tc := range []struct {
		name string
		// cut damages a fresh copy and returns how to repair it.
		cut func(t *testing.T, dir string) func()
	}{
		{"blk record cut short", func(t *testing.T, dir string) func() {
			path := filepath.Join(dir, "blk00000.dat")
			rest := truncateFile(t, path, tipRecord+100)
			return func() { writeAt(t, path, rest, tipRecord+100) }
		}},
		{"blk record header cut short", func(t *testing.T, dir string) func() {
			path := filepath.Join(dir, "blk00000.dat")
			rest := truncateFile(t, path, tipRecord+5)
			return func() { writeAt(t, path, rest, tipRecord+5) }
		}},
		{"blk record not written, zero padding", func(t *testing.T, dir string) func() {
			path := filepath.Join(dir, "blk00000.dat")
			rest := truncateFile(t, path, tipRecord)
			if err := os.Truncate(path, 16<<20); err != nil {
				t.Fatal(err)
			}
			return func() { writeAt(t, path, rest, tipRecord) }
		}},
		{"blk record half written into the padding", func(t *testing.T, dir string) func() {
			path := filepath.Join(dir, "blk00000.dat")
			rest := truncateFile(t, path, tipRecord)
			if err := os.Truncate(path, 16<<20); err != nil {
				t.Fatal(err)
			}
			writeAt(t, path, rest[:len(rest)/2], tipRecord)
			return func() { writeAt(t, path, rest, tipRecord) }
		}},
		{"undo record half written into the padding", func(t *testing.T, dir string) func() {
			path := filepath.Join(dir, "rev00000.dat")
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			rec := bytes.Clone(raw[tipUndoRecord:])
			writeAt(t, path, make([]byte, len(rec)), tipUndoRecord)
			writeAt(t, path, rec[:60], tipUndoRecord)
			return func() { writeAt(t, path, rec, tipUndoRecord) }
		}},
		{"undo record cut short", func(t *testing.T, dir string) func() {
			path := filepath.Join(dir, "rev00000.dat")
			rest := truncateFile(t, path, tipUndoRecord+40)
			return func() { writeAt(t, path, rest, tipUndoRecord+40) }
		}},
		{"undo record not written, zero padding", func(t *testing.T, dir string) func() {
			path := filepath.Join(dir, "rev00000.dat")
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			rec := bytes.Clone(raw[tipUndoRecord:])
			writeAt(t, path, make([]byte, len(rec)), tipUndoRecord)
			return func() { writeAt(t, path, rec, tipUndoRecord) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyFixture(t, fx)
			repair := tc.cut(t, dir)
			fallback := &countingSource{BlockSource: orig}
			src := NewBlocksDirSource(openFixtureDir(t, dir), fallback, testLogger(t))
			ctx := testCtx(t)

			// Blocks before the tip are all there.
			parent, _ := fx.Block(tip.Prev)
			if _, err := src.FetchBlocks(ctx, []chainhash.Hash{parent.Hash}, nil); err != nil {
				t.Fatal(err)
			}
			got, err := src.FetchBlocks(ctx, []chainhash.Hash{parent.Hash, tip.Hash}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if fallback.blocks.Load() != 1 {
				t.Fatalf("fallback asked for %d blocks, want 1 (the tip)", fallback.blocks.Load())
			}
			if got[1].Hash != tip.Hash || !equalScripts(got[1].PrevScripts, wantScripts) {
				t.Fatal("the fallback's block is not the tip with its spent scripts")
			}

			repair()
			got, err = src.FetchBlocks(ctx, []chainhash.Hash{tip.Hash}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if fallback.blocks.Load() != 1 {
				t.Fatalf("fallback asked again after the records were written")
			}
			if !equalScripts(got[0].PrevScripts, wantScripts) {
				t.Fatal("spent scripts differ once read from the files")
			}
			files, fromFallback := src.BlockCounts()
			if files != 3 || fromFallback != 1 {
				t.Errorf("block counts: %d from files, %d from the fallback; want 3 and 1", files, fromFallback)
			}
		})
	}
}

// Without a fallback, a block the files cannot answer is an error (the
// indexer retries it), never a wrong answer.
func TestBlocksDirWithoutFallbackFails(t *testing.T) {
	fx := corefiles.LoadFixture(t)
	dir := copyFixture(t, fx)
	tip, _ := fx.Block(fx.Tip)
	truncateFile(t, filepath.Join(dir, "blk00000.dat"), tip.DataPos+50)
	src := NewBlocksDirSource(openFixtureDir(t, dir), nil, testLogger(t))
	_, _, err := src.FetchBlock(testCtx(t), tip.Hash)
	if !errors.Is(err, blockfiles.ErrNotInFiles) {
		t.Fatalf("got %v, want ErrNotInFiles", err)
	}
}

// writeChain writes the fixture's blocks with the writer.
func writeChain(t *testing.T, fx *corefiles.Fixture, opts corefiles.Options) (string, []corefiles.Location) {
	t.Helper()
	blocks, err := fx.StoredBlocks()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	locs, err := corefiles.Write(dir, fx.Params, blocks, opts)
	if err != nil {
		t.Fatal(err)
	}
	return dir, locs
}

// The reader agrees with the writer on chains Core's single file pair
// does not show: plain files without xor.dat (Core before v28), a zero
// key, and a chain over many blk/rev pairs, fetched in runs of several
// lengths.
func TestBlocksDirReadsWrittenChains(t *testing.T) {
	fx := corefiles.LoadFixture(t)
	for _, tc := range []struct {
		name  string
		opts  corefiles.Options
		files int
	}{
		{"plain, no xor.dat", corefiles.Options{NoXORFile: true}, 1},
		{"zero key", corefiles.Options{}, 1},
		{"many files", corefiles.Options{Key: [8]byte{1, 2, 3, 4, 5, 6, 7, 8}, MaxFileSize: 12000, BlockChunk: 8 << 10, UndoChunk: 2 << 10}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, locs := writeChain(t, fx, tc.opts)
			if n := locs[len(locs)-1].File + 1; n < tc.files {
				t.Fatalf("%d files, want at least %d", n, tc.files)
			}
			src := NewBlocksDirSource(openFixtureDir(t, dir), nil, testLogger(t))
			for _, run := range []int{1, 5, 16} {
				for start := 0; start < len(fx.Blocks); start += run {
					end := min(start+run, len(fx.Blocks))
					var hashes []chainhash.Hash
					for _, b := range fx.Blocks[start:end] {
						hashes = append(hashes, b.Hash)
					}
					got, err := src.FetchBlocks(testCtx(t), hashes, nil)
					if err != nil {
						t.Fatalf("run %d at %d: %v", run, start, err)
					}
					for i, fb := range got {
						want, _ := spentFromREST(t, fx.Blocks[start+i].SpentTxOuts)
						if !equalScripts(fb.PrevScripts, want) {
							t.Fatalf("run %d, h%d: spent scripts differ", run, fx.Blocks[start+i].Height)
						}
					}
				}
			}
		})
	}
}

// Core appends to the newest files while the source reads them: records
// that arrive after a miss — in the same file, in its rev file, and in new
// files — are found without reopening the directory.
func TestBlocksDirFollowsGrowingFiles(t *testing.T) {
	fx := corefiles.LoadFixture(t)
	full, locs := writeChain(t, fx, corefiles.Options{Key: fx.Key, MaxFileSize: 60000, BlockChunk: 64 << 10, UndoChunk: 16 << 10})
	files := locs[len(locs)-1].File + 1
	if files < 3 {
		t.Fatalf("only %d files", files)
	}
	// The growing copy starts with the first file pair's first half.
	dir := t.TempDir()
	copyPrefix := func(name string, n int64) {
		raw, err := os.ReadFile(filepath.Join(full, name))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			if err := os.WriteFile(path, make([]byte, len(raw)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		writeAt(t, path, raw[:min(n, int64(len(raw)))], 0)
	}
	key, _ := os.ReadFile(filepath.Join(full, "xor.dat"))
	os.WriteFile(filepath.Join(dir, "xor.dat"), key, 0o644)
	copyPrefix("blk00000.dat", 30000)
	copyPrefix("rev00000.dat", 1000)

	fallback := &countingSource{BlockSource: NewBlocksDirSource(openFixtureDir(t, fx.BlocksDir), nil, zerolog.Nop())}
	src := NewBlocksDirSource(openFixtureDir(t, dir), fallback, testLogger(t))
	ctx := testCtx(t)
	fetch := func(b *corefiles.FixtureBlock) {
		t.Helper()
		got, err := src.FetchBlocks(ctx, []chainhash.Hash{b.Hash}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := spentFromREST(t, b.SpentTxOuts)
		if !equalScripts(got[0].PrevScripts, want) {
			t.Fatalf("h%d: spent scripts differ", b.Height)
		}
	}
	// A block of the part already there is read; the walk of the file
	// stops at the zeros where the rest will go.
	early, _ := fx.Block(locs[50].Hash)
	fetch(early)
	// Core writes everything, file after file; each block is asked for
	// once it is there.
	for n := range files {
		for _, prefix := range []string{"blk", "rev"} {
			copyPrefix(prefix+pad5(n)+".dat", 1<<40)
		}
		for i, loc := range locs {
			if loc.File == n {
				fb, _ := fx.Block(locs[i].Hash)
				fetch(fb)
			}
		}
	}
	if got := fallback.blocks.Load(); got != 0 {
		t.Errorf("%d blocks from the fallback; every block was written before it was asked for", got)
	}
}

func pad5(n int) string {
	s := "00000" + itoa(n)
	return s[len(s)-5:]
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// siblingBlock builds a block on parent whose second transaction spends
// op; tag makes its coinbase, and so its hash, unique. The writer and the
// reader check no proof of work or signatures, only hashes and the merkle
// root.
func siblingBlock(parent *wire.MsgBlock, height int32, op wire.OutPoint, tag byte) *wire.MsgBlock {
	cb := wire.NewMsgTx(2)
	cb.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Index: 0xffffffff}, SignatureScript: []byte{0x02, byte(height), 0x00, tag}, Sequence: 0xffffffff})
	cb.AddTxOut(&wire.TxOut{Value: 50, PkScript: []byte{0x51}})
	spend := wire.NewMsgTx(2)
	spend.AddTxIn(&wire.TxIn{PreviousOutPoint: op, Sequence: 0xffffffff})
	spend.AddTxOut(&wire.TxOut{Value: 1, PkScript: []byte{0x51}})
	blk := &wire.MsgBlock{Header: wire.BlockHeader{
		Version: 4, PrevBlock: parent.BlockHash(), Timestamp: parent.Header.Timestamp.Add(time.Second), Bits: parent.Header.Bits,
	}}
	blk.Transactions = []*wire.MsgTx{cb, spend}
	blk.Header.MerkleRoot = wirescan.MerkleRoot([]chainhash.Hash{cb.TxHash(), spend.TxHash()})
	return blk
}

// Two children of one parent whose undo records have the same shape pass
// both the checksum (it names the parent) and the shape check. When their
// contents differ, the source cannot tell which is whose and asks the
// fallback; when they are the same bytes, either is right and the files
// answer.
func TestBlocksDirSiblingsWithTheSameShape(t *testing.T) {
	fx := corefiles.LoadFixture(t)
	stored, err := fx.StoredBlocks()
	if err != nil {
		t.Fatal(err)
	}
	const top = 120
	chain := stored[:top+1]
	parent := chain[top]
	coinbaseOut := func(h int) wire.OutPoint {
		return wire.OutPoint{Hash: chain[h].Transactions[0].TxHash(), Index: 0}
	}
	for _, tc := range []struct {
		name      string
		a, b      wire.OutPoint
		ambiguous bool
	}{
		{"different coins", coinbaseOut(50), coinbaseOut(51), true},
		{"the same coin", coinbaseOut(50), coinbaseOut(50), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := siblingBlock(parent, top+1, tc.a, 'a')
			b := siblingBlock(parent, top+1, tc.b, 'b')
			dir := t.TempDir()
			if _, err := corefiles.Write(dir, fx.Params, append(append([]*wire.MsgBlock(nil), chain...), a, b), corefiles.Options{Key: fx.Key}); err != nil {
				t.Fatal(err)
			}
			scriptOf := func(op wire.OutPoint) []byte {
				for _, blk := range chain {
					if blk.Transactions[0].TxHash() == op.Hash {
						return blk.Transactions[0].TxOut[op.Index].PkScript
					}
				}
				t.Fatalf("%s is no coinbase output of the chain", op)
				return nil
			}
			fallback := &countingSource{BlockSource: &fixedSource{
				blocks: map[chainhash.Hash]*wire.MsgBlock{a.BlockHash(): a, b.BlockHash(): b},
				prev:   map[chainhash.Hash][][]byte{a.BlockHash(): {scriptOf(tc.a)}, b.BlockHash(): {scriptOf(tc.b)}},
			}}
			src := NewBlocksDirSource(openFixtureDir(t, dir), fallback, testLogger(t))
			for _, blk := range []*wire.MsgBlock{a, b} {
				got, err := src.FetchBlocks(testCtx(t), []chainhash.Hash{blk.BlockHash()}, nil)
				if err != nil {
					t.Fatal(err)
				}
				want := scriptOf(blk.Transactions[1].TxIn[0].PreviousOutPoint)
				if len(got[0].PrevScripts) != 1 || !bytes.Equal(got[0].PrevScripts[0], want) {
					t.Fatalf("block %s: wrong spent script", blk.BlockHash())
				}
			}
			wantFallback := int64(0)
			if tc.ambiguous {
				wantFallback = 2
			}
			if got := fallback.blocks.Load(); got != wantFallback {
				t.Errorf("%d blocks from the fallback, want %d", got, wantFallback)
			}
		})
	}
}

// fixedSource serves blocks it was given, with spent scripts looked up in
// their own chain's coinbases (enough for siblingBlock's blocks).
type fixedSource struct {
	blocks map[chainhash.Hash]*wire.MsgBlock
	prev   map[chainhash.Hash][][]byte
}

func (s *fixedSource) Mode() string { return "fixed" }

func (s *fixedSource) FetchBlock(_ context.Context, h chainhash.Hash) (*wire.MsgBlock, [][]byte, error) {
	blk, ok := s.blocks[h]
	if !ok {
		return nil, nil, nodeclient.ErrBlockNotFound
	}
	return blk, s.prev[h], nil
}

// recordHeaderSize is the framing before a record's payload in Core's
// blk and rev files: network magic and size.
const recordHeaderSize = 8
