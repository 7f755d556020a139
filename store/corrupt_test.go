package store

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/cfindexd/cfindexd/store/boltfile"
	bolt "go.etcd.io/bbolt"
)

// damagedChain is the chain the damage tests store: 3,000 blocks with
// filters of up to ~2.5 KB, so the filters bucket is a two-level B+tree of
// about a thousand leaf pages.
func damagedChain() []BlockRecord { return genChainMaxN(90, nil, 3000, 2000) }

// writeStore creates a store at path holding chain, closed.
func writeStore(t *testing.T, path string, chain []BlockRecord) {
	t.Helper()
	s, err := Open(path, chain[0].Hash, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	commitAll(t, s, chain, 500)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// fileMeta returns the page size and high-water page count of the file at
// path, as bbolt will read them.
func fileMeta(t *testing.T, path string) (pageSize, pgid uint64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	m, err := boltfile.PickMeta(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	return m.PageSize, m.PGID
}

// bucketPages returns the branch and leaf pages of a top-level bucket of the
// store file at path, walking its B+tree from the root bbolt reports.
func bucketPages(t *testing.T, path string, bucket []byte) (branches, leaves []uint64) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var root uint64
	_ = db.View(func(tx *bolt.Tx) error { root = uint64(tx.Bucket(bucket).Root()); return nil })
	db.Close()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := fileMeta(t, path)
	ne := binary.NativeEndian
	var walk func(id uint64)
	walk = func(id uint64) {
		p := raw[id*ps:]
		flags, count := ne.Uint16(p[8:]), ne.Uint16(p[10:])
		if flags == boltfile.LeafPage {
			leaves = append(leaves, id)
			return
		}
		branches = append(branches, id)
		for i := range uint64(count) {
			walk(ne.Uint64(p[boltfile.PageHeaderSize+i*boltfile.ElementSize+8:]))
		}
	}
	walk(root)
	if len(leaves) < 10 || len(branches) == 0 {
		t.Fatalf("bucket %s: %d branch and %d leaf pages; the test needs a deeper tree", bucket, len(branches), len(leaves))
	}
	return branches, leaves
}

// patchFile writes b at offset off of the file at path.
func patchFile(t *testing.T, path string, off uint64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, int64(off)); err != nil {
		t.Fatal(err)
	}
}

func u16(v uint16) []byte { return binary.NativeEndian.AppendUint16(nil, v) }
func u32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }
func u64(v uint64) []byte { return binary.NativeEndian.AppendUint64(nil, v) }

// isCorruptWithHint reports whether err is the clear error the store owes
// an operator: ErrCorrupt, naming --reindex.
func isCorruptWithHint(err error) bool {
	return errors.Is(err, ErrCorrupt) && strings.Contains(err.Error(), "cfindexd --reindex")
}

// TestOpenDamagedFile damages a store file the ways a crash, a full disk or
// a failing disk do and opens it: a file that is still whole opens and
// reads back every block; any other is refused with ErrCorrupt naming
// --reindex, without a panic or SIGBUS (either would kill this test
// binary), without changing the file, and without keeping it locked.
func TestOpenDamagedFile(t *testing.T) {
	chain := damagedChain()
	master := filepath.Join(t.TempDir(), "master.db")
	writeStore(t, master, chain)
	ps, pgid := fileMeta(t, master)
	size := uint64(len(fileBytes(t, master)))
	t.Logf("store: %d bytes, %d pages of %d bytes in use", size, pgid, ps)
	var metaRoot, metaFreelist uint64
	{
		f, _ := os.Open(master)
		m, err := boltfile.PickMeta(f, int64(size))
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		metaRoot, metaFreelist = m.Root, m.Freelist
	}
	headerBranches, _ := bucketPages(t, master, bucketHeaders)

	type damage func(t *testing.T, path string)
	truncate := func(n uint64) damage {
		return func(t *testing.T, path string) {
			if err := os.Truncate(path, int64(n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	zero := func(off, n uint64) damage {
		return func(t *testing.T, path string) { patchFile(t, path, off, make([]byte, n)) }
	}
	patch := func(off uint64, b []byte) damage {
		return func(t *testing.T, path string) { patchFile(t, path, off, b) }
	}
	tests := []struct {
		name   string
		damage damage
		whole  bool // the store must still open and read back everything
	}{
		{"truncated to 0 bytes", truncate(0), false},
		{"truncated to 100 bytes", truncate(100), false},
		{"truncated to one page", truncate(ps), false},
		{"truncated to three pages", truncate(3 * ps), false},
		{"truncated to four pages", truncate(4 * ps), false},
		{"truncated to half its pages", truncate(pgid / 2 * ps), false},
		{"truncated one page short", truncate((pgid - 1) * ps), false},
		{"truncated mid-page", truncate((pgid-1)*ps + ps/2), false},
		{"truncated after its last page in use", truncate(pgid * ps), true},
		{"meta page 0 zeroed", zero(0, ps), true},
		{"meta page 1 zeroed", zero(ps, ps), true},
		{"both meta pages zeroed", zero(0, 2*ps), false},
		{"whole file zeroed", zero(0, size), false},
		{"meta checksums broken", func(t *testing.T, path string) {
			patchFile(t, path, boltfile.PageHeaderSize+56, u64(1))
			patchFile(t, path, ps+boltfile.PageHeaderSize+56, u64(1))
		}, false},
		{"random bytes", func(t *testing.T, path string) {
			b := make([]byte, size)
			rng := rand.New(rand.NewPCG(testSeed, 91))
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			patchFile(t, path, 0, b)
		}, false},
		{"root page zeroed", zero(metaRoot*ps, ps), false},
		{"freelist page zeroed", zero(metaFreelist*ps, ps), false},
		{"freelist lists a page past the end", func(t *testing.T, path string) {
			patchFile(t, path, metaFreelist*ps+10, u16(1))
			patchFile(t, path, metaFreelist*ps+boltfile.PageHeaderSize, u64(pgid+5))
		}, false},
		{"bucket root page zeroed", zero(headerBranches[0]*ps, ps), false},
		{"bucket root page names another id", patch(headerBranches[0]*ps, u64(headerBranches[0]+1)), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "filters.db")
			if err := os.WriteFile(path, fileBytes(t, master), 0o600); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, path)
			before := fileBytes(t, path)
			s, err := Open(path, chain[0].Hash, Options{NoSync: true, Timeout: 200 * time.Millisecond})
			if tc.whole {
				if err != nil {
					t.Fatalf("Open of a whole store: %v", err)
				}
				tip, ok := s.Tip()
				if !ok {
					t.Fatal("no tip")
				}
				// A lost meta page may take the store back one commit.
				if n := readEverything(t, s, chain, tip.Height); n > 0 {
					t.Fatalf("%d reads of a whole store failed", n)
				}
				t.Logf("opened at tip %d of %d", tip.Height, len(chain)-1)
				s.Close()
				return
			}
			if err == nil {
				s.Close()
				t.Fatal("Open of a damaged store succeeded")
			}
			if !isCorruptWithHint(err) {
				t.Fatalf("Open: %v; want ErrCorrupt naming --reindex", err)
			}
			t.Logf("Open: %v", err)
			if after := fileBytes(t, path); string(after) != string(before) {
				t.Fatal("a failed Open changed the file")
			}
			// The failed Open released the file: another attempt fails
			// the same way instead of with ErrLocked.
			if _, err := Open(path, chain[0].Hash, Options{NoSync: true, Timeout: 200 * time.Millisecond}); !isCorruptWithHint(err) {
				t.Fatalf("second Open: %v", err)
			}
		})
	}
}

// readEverything reads every block of chain (0..tip) the ways p2p and rest
// do: ranges by height (filters, filter headers, headers), getcfilters- and
// getcfheaders-style ranges by stop hash, checkpoints, and point reads by
// height and by hash. Each read must return the right data or an error
// wrapping ErrCorrupt that names --reindex; it returns how many reads
// failed that way.
func readEverything(t *testing.T, s *Store, chain []BlockRecord, tip uint32) (corrupt int) {
	t.Helper()
	check := func(what string, err error, ok func() bool) {
		t.Helper()
		switch {
		case err == nil:
			if !ok() {
				t.Fatalf("%s: wrong data and no error", what)
			}
		case isCorruptWithHint(err):
			if corrupt == 0 {
				t.Logf("first failed read: %s: %v", what, err)
			}
			corrupt++
		default:
			t.Fatalf("%s: %v; want the data or ErrCorrupt naming --reindex", what, err)
		}
	}
	for start := uint32(0); start <= tip; start += 1000 {
		end := min(start+999, tip)
		want := chain[start : end+1]
		recs, err := s.FiltersByHeight(start, end)
		check("FiltersByHeight", err, func() bool {
			return slices.EqualFunc(recs, want, func(a, b BlockRecord) bool { return diffRecord(a, b) == "" })
		})
		fhs, err := s.FilterHeadersByHeight(start, end)
		check("FilterHeadersByHeight", err, func() bool {
			return slices.EqualFunc(fhs, want, func(a chainhash.Hash, b BlockRecord) bool { return a == b.FilterHeader })
		})
		hdrs, err := s.Headers(start, end)
		check("Headers", err, func() bool {
			return slices.EqualFunc(hdrs, want, func(a wire.BlockHeader, b BlockRecord) bool { return a.BlockHash() == b.Hash })
		})
		stop := want[len(want)-1].Hash
		byStop, err := s.FiltersForStop(stop, start)
		check("FiltersForStop", err, func() bool {
			return slices.EqualFunc(byStop, want, func(a, b BlockRecord) bool { return diffRecord(a, b) == "" })
		})
		prev, hashes, err := s.FilterHashesForStop(stop, start)
		check("FilterHashesForStop", err, func() bool {
			wantPrev := chainhash.Hash{}
			if start > 0 {
				wantPrev = chain[start-1].FilterHeader
			}
			return prev == wantPrev && slices.EqualFunc(hashes, want, func(a chainhash.Hash, b BlockRecord) bool { return a == b.FilterHash })
		})
	}
	cps, err := s.FilterHeaderCheckpoints(chain[tip].Hash, 100)
	check("FilterHeaderCheckpoints", err, func() bool {
		for i, cp := range cps {
			if cp != chain[(i+1)*100].FilterHeader {
				return false
			}
		}
		return len(cps) == int(tip/100)
	})
	for h := uint32(0); h <= tip; h++ {
		hash, err := s.HashAt(h)
		check("HashAt", err, func() bool { return hash == chain[h].Hash })
		rec, active, err := s.FilterByHash(chain[h].Hash)
		check("FilterByHash", err, func() bool { return active && diffRecord(rec, chain[h]) == "" })
	}
	return corrupt
}

// TestCorruptPagesAreErrors damages one page inside the store's B+trees —
// a leaf of the filters bucket in the middle of the chain, or a branch page
// — the ways a failing disk or a stray write would, then reads every block
// every way a peer or HTTP client can. bbolt panics or faults on most of
// these (a page of the wrong type or id, element offsets outside the
// mapping, a child id past the end of the file); each read must come back
// with the right data or ErrCorrupt naming --reindex, at least one read
// must see the damage, and the store must keep answering reads that do not
// touch the page.
func TestCorruptPagesAreErrors(t *testing.T) {
	chain := damagedChain()
	tip := uint32(len(chain) - 1)
	master := filepath.Join(t.TempDir(), "master.db")
	writeStore(t, master, chain)
	ps, _ := fileMeta(t, master)
	filterBranches, filterLeaves := bucketPages(t, master, bucketFilters)
	_, headerLeaves := bucketPages(t, master, bucketHeaders)
	leaf := filterLeaves[len(filterLeaves)/2] * ps
	branch := filterBranches[len(filterBranches)-1] * ps
	elem := uint64(boltfile.PageHeaderSize) // first element of a page

	rng := rand.New(rand.NewPCG(testSeed, 92))
	noise := make([]byte, ps)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	tests := []struct {
		name   string
		off    uint64
		bytes  []byte
		silent bool // bbolt never reads the damaged field: reads succeed
	}{
		{"leaf type zeroed", leaf + 8, u16(0), false},
		{"leaf typed as a meta page", leaf + 8, u16(boltfile.MetaPage), false},
		{"leaf typed as a branch", leaf + 8, u16(boltfile.BranchPage), false},
		{"leaf names another page", leaf, u64(12345), false},
		{"leaf claims 65535 elements", leaf + 10, u16(0xFFFF), false},
		{"leaf element key offset past the file", leaf + elem + 4, u32(0xFFFFFFF0), false},
		{"leaf element value size past the file", leaf + elem + 12, u32(0x7FFFFFFF), false},
		{"leaf zeroed", leaf, make([]byte, ps), false},
		{"leaf overwritten with noise", leaf, noise, false},
		{"leaf overflow past the end of the file", leaf + 12, u32(0x00FFFFFF), true},
		{"branch child past the end of the file", branch + elem + 8, u64(1 << 40), false},
		{"branch child far outside the mapping", branch + elem + 8, u64(1 << 30), false},
		{"branch child is the meta page", branch + elem + 8, u64(0), false},
		{"branch child is the freelist's neighbour", branch + elem + 8, u64(2), false},
		{"branch zeroed", branch, make([]byte, ps), false},
		{"headers leaf zeroed", headerLeaves[len(headerLeaves)/3] * ps, make([]byte, ps), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "filters.db")
			if err := os.WriteFile(path, fileBytes(t, master), 0o600); err != nil {
				t.Fatal(err)
			}
			patchFile(t, path, tc.off, tc.bytes)
			s, err := Open(path, chain[0].Hash, Options{NoSync: true})
			if err != nil {
				t.Fatalf("Open: %v (damage below the top of the tree is found by reads, not at open)", err)
			}
			defer s.Close()
			corrupt := readEverything(t, s, chain, tip)
			if tc.silent && corrupt > 0 {
				t.Fatalf("%d reads failed, want none", corrupt)
			}
			if !tc.silent && corrupt == 0 {
				t.Fatal("no read saw the damage")
			}
			// Reads away from the page still work.
			if got, err := s.HashAt(0); err != nil || got != chain[0].Hash {
				t.Fatalf("HashAt(0) after damage: %v", err)
			}
			if err := s.brokenErr(); err != nil {
				t.Fatalf("a read broke the store for good: %v", err)
			}
			t.Logf("%d reads failed cleanly", corrupt)
		})
	}
}

// TestTruncatedWhileOpen truncates the file under an open store, as a
// full disk, a stray `truncate` or a shrinking network volume might: the
// pages past the new end are still mapped, and reading them raises SIGBUS.
// Each read must return its data or ErrCorrupt, never kill the process.
func TestTruncatedWhileOpen(t *testing.T) {
	chain := damagedChain()
	tip := uint32(len(chain) - 1)
	path := filepath.Join(t.TempDir(), "filters.db")
	writeStore(t, path, chain)
	ps, pgid := fileMeta(t, path)
	s, err := Open(path, chain[0].Hash, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := os.Truncate(path, int64(pgid/2*ps)); err != nil {
		t.Fatal(err)
	}
	corrupt := readEverything(t, s, chain, tip)
	if corrupt == 0 {
		t.Fatal("no read saw the truncation")
	}
	t.Logf("%d reads failed cleanly", corrupt)
}

// TestCorruptPageDuringCommit damages the last leaf of the filters bucket,
// the page the next CommitBatch appends to: the commit fails with
// ErrCorrupt naming --reindex and writes nothing, and the store keeps
// serving reads and closes normally.
func TestCorruptPageDuringCommit(t *testing.T) {
	chain := damagedChain()
	path := filepath.Join(t.TempDir(), "filters.db")
	writeStore(t, path, chain[:2000])
	ps, _ := fileMeta(t, path)
	_, leaves := bucketPages(t, path, bucketFilters)
	patchFile(t, path, leaves[len(leaves)-1]*ps, make([]byte, ps))

	s, err := Open(path, chain[0].Hash, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	err = s.CommitBatch(chain[2000:2010])
	if !isCorruptWithHint(err) {
		t.Fatalf("CommitBatch onto a damaged page: %v", err)
	}
	t.Logf("CommitBatch: %v", err)
	if tip, _ := s.Tip(); tip.Height != 1999 {
		t.Fatalf("tip moved to %d", tip.Height)
	}
	if recs, err := s.FiltersByHeight(0, 999); err != nil || len(recs) != 1000 {
		t.Fatalf("reads after the failed commit: %v", err)
	}
	if _, err := s.Rollback(1990); !isCorruptWithHint(err) && err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}
