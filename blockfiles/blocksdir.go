package blockfiles

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// Reasons a block is not read from the blocks directory; the source then
// asks its fallback. None of them is an error of the node or of cfindexd.
var (
	// ErrNotInFiles: no block record with this hash (not written
	// yet, pruned, or the record is cut short).
	ErrNotInFiles = errors.New("block not in the block files")
	// errUndoNotInFiles: the block is there but no undo record matches it
	// (not connected yet, or not flushed).
	errUndoNotInFiles = errors.New("no undo record for the block in its rev file")
	// errUndoAmbiguous: two different undo records fit the block (sibling
	// blocks with the same parent and the same shape).
	errUndoAmbiguous = errors.New("two undo records fit the block")
)

// maxRevRecords bounds the undo-record positions kept in memory (12 bytes
// each, about 3 MiB): rev files' indexes are dropped least recently used
// first and rebuilt by walking the file again when needed.
const maxRevRecords = 1 << 18

// maxUndoHints bounds the map of recently matched undo records that points
// a block's search at the record after its parent's.
const maxUndoHints = 4096

// BlocksDir reads Bitcoin Core's blocks directory in place: blk*.dat, rev*.dat
// and xor.dat. Files are opened read-only (the last 16 read stay open) and
// never locked or written; Core may append to them meanwhile.
//
// Blocks are found through an in-memory index built by walking the files'
// record headers (8 + 80 bytes per record; the body is skipped): per blk
// file, one 12-byte entry per block (32 bits of its hash and its parent's,
// and its offset), sorted by hash. Files are walked newest first and only
// until the block asked for is found, so a daemon near the node's tip walks
// the last files only, and a catch-up from genesis walks each file once.
// A miss first walks whatever was appended since (new records, new files),
// then older files. Undo records are located per rev file by walking its
// headers (12 bytes per record, for at most maxRevRecords records at a
// time) and matched to a block by checksum and shape, starting where the
// block's parent matched or, lacking that, at the same relative position as
// the block in its blk file.
type Dir struct {
	dir              string
	key              xorKey
	hasKey           bool
	blkWalk, revWalk recordWalk
	log              zerolog.Logger
	files            openFiles

	mu       sync.RWMutex
	blk      map[int]*blkFile // walked blk files by number
	highest  int              // highest blk file number known
	nextBack int              // highest number not walked yet below the walked ones; -1 when none
	gen      atomic.Uint64    // bumped by every refresh
	lastHit  atomic.Int64     // file of the last block found, tried first

	revMu    sync.Mutex
	rev      map[int]*revFile
	revRecs  int
	revClock uint64
	hints    map[chainhash.Hash]undoPos
	// undoReads counts the undo records read to find blocks' (tests
	// check that the search starts where the record is).
	undoReads atomic.Uint64
}

// blkEntry is one block record of a blk file.
type blkEntry struct {
	hash, parent uint32 // first 4 bytes of the block's and its parent's hash (internal order)
	off          uint32 // offset of the record (its magic)
}

// blkFile is the index of one blk file.
type blkFile struct {
	num     int
	scanned int64 // where the next walk starts
	size    int64 // file size at the last walk
	// open: the walk stopped before the end of the file (zero padding, a
	// partial record, garbage): the file may change in place.
	open    bool
	entries []blkEntry // sorted by hash, then offset
	// forks are parent prefixes with two or more children in this file
	// and its neighbours, sorted: blocks there may have an ambiguous undo.
	forks []uint32
	// version counts the walks that changed entries.
	version uint64
}

// revFile is the record index of one rev file.
type revFile struct {
	num     int
	scanned int64
	size    int64
	open    bool
	recs    []revRec // in file order
	used    uint64   // LRU clock
	// blkOffs are the offsets of the block records of the blk file of the
	// same number, in file order (as of its index's blkVersion), for a
	// block's ordinal; delta is, for the last block whose record was found
	// here, its record's index minus its ordinal (valid with hasDelta).
	blkOffs    []uint32
	blkVersion uint64
	delta      int
	hasDelta   bool
}

// revRec is one undo record.
type revRec struct {
	off, size uint32
	ntx       uint32 // the CBlockUndo's transaction count
}

// undoPos is where a block's undo record was found.
type undoPos struct {
	file, idx int
}

// undoStart is where the search for a block's undo record starts: the
// record index, and the block's ordinal among its blk file's records (-1
// when unknown).
type undoStart struct {
	idx, ordinal int
}

// blkLoc is a candidate position of a block.
type blkLoc struct {
	file   int
	off    uint32
	extent int64 // the walked length of the file, for relative positions
}

// OpenBlocksDir prepares to read the blocks directory dir of a node on the
// network with magic net. It reads xor.dat (absent: plain files) and lists
// the blk files; nothing is walked until a block is asked for.
func Open(dir string, net wire.BitcoinNet, log zerolog.Logger) (*Dir, error) {
	key, hasKey, err := readXORKey(dir)
	if err != nil {
		return nil, fmt.Errorf("blocks dir %s: %w", dir, err)
	}
	var magic [4]byte
	binary.LittleEndian.PutUint32(magic[:], uint32(net))
	d := &Dir{
		dir: dir, key: key, hasKey: hasKey, log: log,
		blkWalk: recordWalk{key: key, magic: magic, minSize: minBlockRecord, maxSize: maxBlockRecord, peek: wire.MaxBlockHeaderPayload},
		revWalk: recordWalk{key: key, magic: magic, minSize: 1, maxSize: maxUndoRecord, trailer: undoChecksumSize, peek: 9},
		blk:     map[int]*blkFile{},
		rev:     map[int]*revFile{},
		hints:   map[chainhash.Hash]undoPos{},
	}
	blks, _, err := d.list()
	if err != nil {
		return nil, err
	}
	if len(blks) == 0 {
		return nil, fmt.Errorf("blocks dir %s: no blk*.dat files", dir)
	}
	d.highest = blks[len(blks)-1]
	d.nextBack = d.highest
	d.lastHit.Store(int64(d.highest))
	return d, nil
}

// Close closes the block files kept open between reads. The BlocksDir
// stays usable: files are opened again as needed.
func (d *Dir) Close() error {
	d.files.closeAll()
	return nil
}

// Dir returns the directory read.
func (d *Dir) Dir() string { return d.dir }

// Obfuscated reports whether xor.dat holds a non-zero key.
func (d *Dir) Obfuscated() bool { return d.key != xorKey{} }

// list returns the blk and rev file numbers in the directory, ascending.
func (d *Dir) list() (blk, rev []int, err error) {
	ents, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, nil, fmt.Errorf("blocks dir: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".dat") || len(name) < 8 {
			continue
		}
		n, err := strconv.Atoi(name[3 : len(name)-4])
		if err != nil || n < 0 {
			continue
		}
		switch name[:3] {
		case "blk":
			blk = append(blk, n)
		case "rev":
			rev = append(rev, n)
		}
	}
	slices.Sort(blk)
	slices.Sort(rev)
	return blk, rev, nil
}

func (d *Dir) blkPath(n int) string { return filepath.Join(d.dir, fmt.Sprintf("blk%05d.dat", n)) }
func (d *Dir) revPath(n int) string { return filepath.Join(d.dir, fmt.Sprintf("rev%05d.dat", n)) }

// FirstBlockHash returns the hash of the first block record of blk00000.dat:
// the chain's genesis block on every node that did not prune it.
func (d *Dir) FirstBlockHash() (chainhash.Hash, error) {
	f, err := os.Open(d.blkPath(0))
	if err != nil {
		return chainhash.Hash{}, err
	}
	defer f.Close()
	var hdr [recordHeaderSize + wire.MaxBlockHeaderPayload]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return chainhash.Hash{}, fmt.Errorf("blk00000.dat: %w", err)
	}
	d.key.apply(hdr[:], 0)
	if [4]byte(hdr[:4]) != d.blkWalk.magic {
		return chainhash.Hash{}, fmt.Errorf("blk00000.dat starts with magic %x, want %x (another network, or a wrong xor.dat)", hdr[:4], d.blkWalk.magic)
	}
	return chainhash.DoubleHashH(hdr[recordHeaderSize:]), nil
}

func hashPrefix(h *chainhash.Hash) uint32 { return binary.LittleEndian.Uint32(h[:4]) }

// ReadBlock returns the block with the given hash read from its blk file,
// checked to hash to it and to match its merkle root, and where it was.
// Errors wrap ErrNotInFiles when no complete record of it is there.
func (d *Dir) ReadBlock(ctx context.Context, hash chainhash.Hash) (*wirescan.ScannedBlock, blkLoc, error) {
	locs, err := d.locate(ctx, hash)
	if err != nil {
		return nil, blkLoc{}, err
	}
	var firstErr error
	for attempt := 0; attempt < 2; attempt++ {
		if attempt > 0 {
			// Every candidate failed: the record may have been half
			// written when it was walked, or the file rewritten. Walk
			// what changed and look again, once.
			if locs, err = d.relocate(hash); err != nil {
				return nil, blkLoc{}, err
			}
		}
		for _, loc := range locs {
			b, err := d.readBlockAt(loc, hash)
			if err == nil {
				d.lastHit.Store(int64(loc.file))
				return b, loc, nil
			}
			if firstErr == nil {
				firstErr = err
			}
		}
		if firstErr == nil {
			break // not in the files at all
		}
	}
	if firstErr == nil {
		firstErr = ErrNotInFiles
	}
	return nil, blkLoc{}, fmt.Errorf("block %s: %w", hash, firstErr)
}

// relocate refreshes the index and looks hash up again.
func (d *Dir) relocate(hash chainhash.Hash) ([]blkLoc, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.refreshLocked(); err != nil {
		return nil, err
	}
	return d.lookupLocked(hashPrefix(&hash)), nil
}

func (d *Dir) readBlockAt(loc blkLoc, hash chainhash.Hash) (*wirescan.ScannedBlock, error) {
	path := d.blkPath(loc.file)
	f, release, err := d.files.acquire(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotInFiles, err)
	}
	raw, _, err := d.blkWalk.readRecord(f, int64(loc.off))
	release()
	if err != nil {
		d.files.forget(path)
		return nil, fmt.Errorf("%w: blk%05d.dat: %v", ErrNotInFiles, loc.file, err)
	}
	b, err := wirescan.ScanBlock(raw, hash)
	if err != nil {
		// A record still being written, or a 32-bit hash prefix shared
		// with another block.
		return nil, fmt.Errorf("%w: blk%05d.dat at %d: %v", ErrNotInFiles, loc.file, loc.off, err)
	}
	return b, nil
}

// locate returns the candidate positions of the block with the given hash
// (records whose hash starts with the same 32 bits), walking appended and
// older records as needed. None means the files do not hold it.
func (d *Dir) locate(ctx context.Context, hash chainhash.Hash) ([]blkLoc, error) {
	prefix := hashPrefix(&hash)
	d.mu.RLock()
	gen := d.gen.Load()
	locs := d.lookupLocked(prefix)
	d.mu.RUnlock()
	if len(locs) > 0 {
		return locs, nil
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gen.Load() != gen {
		// Another miss refreshed meanwhile.
		if locs = d.lookupLocked(prefix); len(locs) > 0 {
			return locs, nil
		}
	}
	if err := d.refreshLocked(); err != nil {
		return nil, err
	}
	if locs = d.lookupLocked(prefix); len(locs) > 0 {
		return locs, nil
	}
	// Walk older files, newest first, until the block turns up. On a big
	// directory (a catch-up from genesis walks all of mainnet's thousands
	// of files once) say so now and then.
	walked := 0
	for d.nextBack >= 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := d.nextBack
		d.nextBack--
		if err := d.walkBlkLocked(n); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // pruned
			}
			return nil, err
		}
		if walked++; walked%500 == 0 {
			d.log.Info().Int("files", walked).Int("next_file", d.nextBack).Msg("blocks dir: indexing older block files")
		}
		if locs = d.lookupLocked(prefix); len(locs) > 0 {
			return locs, nil
		}
	}
	return nil, nil
}

// lookupLocked finds prefix in the file of the last hit and its
// neighbours, then in every walked file.
func (d *Dir) lookupLocked(prefix uint32) []blkLoc {
	hit := int(d.lastHit.Load())
	for _, n := range [...]int{hit, hit + 1, hit - 1} {
		if f := d.blk[n]; f != nil {
			if locs := f.lookup(prefix, nil); len(locs) > 0 {
				return locs
			}
		}
	}
	var locs []blkLoc
	for n, f := range d.blk {
		if n < hit-1 || n > hit+1 {
			locs = f.lookup(prefix, locs)
		}
	}
	return locs
}

func (f *blkFile) lookup(prefix uint32, dst []blkLoc) []blkLoc {
	i, _ := slices.BinarySearchFunc(f.entries, prefix, func(e blkEntry, p uint32) int {
		switch {
		case e.hash < p:
			return -1
		case e.hash > p:
			return 1
		}
		return 0
	})
	for ; i < len(f.entries) && f.entries[i].hash == prefix; i++ {
		dst = append(dst, blkLoc{file: f.num, off: f.entries[i].off, extent: f.scanned})
	}
	return dst
}

// refreshLocked walks what was appended since the last walk: new records
// of walked files that may still change, and new files above the highest.
func (d *Dir) refreshLocked() error {
	d.gen.Add(1)
	blks, _, err := d.list()
	if err != nil {
		return err
	}
	present := make(map[int]bool, len(blks))
	for _, n := range blks {
		present[n] = true
		if n > d.highest {
			d.highest = n
			if err := d.walkBlkLocked(n); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	for n, f := range d.blk {
		if !present[n] {
			// Pruned: let go of the file so that its space is freed.
			delete(d.blk, n)
			d.files.forget(d.blkPath(n))
			d.files.forget(d.revPath(n))
			continue
		}
		st, err := os.Stat(d.blkPath(n))
		if err != nil {
			continue
		}
		if f.open || st.Size() != f.size {
			if err := d.walkBlkLocked(n); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// walkBlkLocked walks blk file n from where its last walk stopped.
func (d *Dir) walkBlkLocked(n int) error {
	fh, err := os.Open(d.blkPath(n))
	if err != nil {
		return err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return err
	}
	f := d.blk[n]
	if f == nil {
		f = &blkFile{num: n}
		d.blk[n] = f
	}
	from := f.scanned
	if from > st.Size() {
		// The file shrank: Core rewrote it (reindex). Start over.
		from, f.entries = 0, nil
	}
	if from > 0 && f.open {
		// The last record before the zero padding may have been
		// walked while Core was still writing it: walk it again.
		f.entries = slices.DeleteFunc(f.entries, func(e blkEntry) bool { return int64(e.off) >= from })
	}
	added := 0
	lastStart := int64(-1)
	end, stop, err := d.blkWalk.walk(newWindowReader(fh, st.Size()), from, func(off int64, size uint32, head []byte) {
		if len(head) < wire.MaxBlockHeaderPayload {
			return
		}
		h := chainhash.DoubleHashH(head[:wire.MaxBlockHeaderPayload])
		f.entries = append(f.entries, blkEntry{hash: hashPrefix(&h), parent: binary.LittleEndian.Uint32(head[4:8]), off: uint32(off)})
		added++
		lastStart = off
	})
	if err != nil {
		return fmt.Errorf("walk blk%05d.dat: %w", n, err)
	}
	f.size = st.Size()
	f.open = stop != stopEOF
	f.scanned = end
	if stop == stopPadding && lastStart >= 0 {
		f.scanned = lastStart
	}
	if stop == stopGarbage {
		d.log.Debug().Int("file", n).Int64("offset", end).Msg("blocks dir: unexpected bytes in a blk file; records after them are read from the fallback source")
	}
	if added > 0 || from == 0 {
		f.version++
		slices.SortFunc(f.entries, func(a, b blkEntry) int {
			if a.hash != b.hash {
				if a.hash < b.hash {
					return -1
				}
				return 1
			}
			return int(int64(a.off) - int64(b.off))
		})
		if !f.open {
			f.entries = slices.Clip(f.entries)
		}
		for _, m := range [...]int{n - 1, n, n + 1} {
			d.computeForksLocked(m)
		}
	}
	return nil
}

// computeForksLocked records the parents with several children among the
// blocks of file n and its walked neighbours.
func (d *Dir) computeForksLocked(n int) {
	f := d.blk[n]
	if f == nil {
		return
	}
	var parents []uint32
	for _, m := range [...]int{n - 1, n, n + 1} {
		if g := d.blk[m]; g != nil {
			for _, e := range g.entries {
				parents = append(parents, e.parent)
			}
		}
	}
	slices.Sort(parents)
	f.forks = f.forks[:0]
	for i := 1; i < len(parents); i++ {
		if parents[i] == parents[i-1] && (len(f.forks) == 0 || f.forks[len(f.forks)-1] != parents[i]) {
			f.forks = append(f.forks, parents[i])
		}
	}
	f.forks = slices.Clip(f.forks)
}

// mayHaveSibling reports whether a block in file n whose parent starts
// with prefix may have a sibling (another child of the same parent) in the
// files around it.
func (d *Dir) mayHaveSibling(n int, parent uint32) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	f := d.blk[n]
	if f == nil {
		return true
	}
	_, found := slices.BinarySearch(f.forks, parent)
	return found
}

// ReadUndo returns the spent scripts of block b, found at loc, from its
// undo record in the rev file of the same number. Errors wrap
// errUndoNotInFiles or errUndoAmbiguous when the files cannot answer.
func (d *Dir) ReadUndo(ctx context.Context, b *wirescan.ScannedBlock, loc blkLoc) (result [][]byte, err error) {
	if len(b.Txids) == 1 {
		return [][]byte{}, nil // a coinbase-only block spends nothing
	}
	want := uint32(len(b.Txids) - 1)
	tried := map[uint32]bool{}
	for attempt := 0; attempt < 2; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// The second attempt first walks what was appended to the rev
		// file: the block may have been connected since.
		recs, start, err := d.revCandidates(loc, b.Header.PrevBlock, attempt > 0)
		if err != nil {
			return nil, err
		}
		var found error = errUndoNotInFiles
		eachOutward(len(recs), start.idx, func(i int) bool {
			rec := recs[i]
			if rec.ntx != want || tried[rec.off] {
				return true
			}
			tried[rec.off] = true
			prev, payload, ok := d.tryUndo(loc.file, rec, b)
			if !ok {
				return true
			}
			if d.mayHaveSibling(loc.file, hashPrefix(&b.Header.PrevBlock)) {
				if err := d.checkUnambiguous(loc.file, rec, b, payload); err != nil {
					found = err
					return false
				}
			}
			d.remember(b.Hash, undoPos{file: loc.file, idx: i}, start.ordinal)
			result, found = prev, nil
			return false
		})
		if found == nil {
			return result, nil
		}
		if !errors.Is(found, errUndoNotInFiles) {
			return nil, found
		}
	}
	return nil, fmt.Errorf("block %s: %w (rev%05d.dat)", b.Hash, errUndoNotInFiles, loc.file)
}

// eachOutward calls fn with 0..n-1, starting at start and moving away from
// it on both sides, until fn returns false.
func eachOutward(n, start int, fn func(int) bool) {
	if n == 0 {
		return
	}
	start = max(0, min(start, n-1))
	for d := 0; start+d < n || start-d >= 0; d++ {
		if start+d < n && !fn(start+d) {
			return
		}
		if d > 0 && start-d >= 0 && !fn(start-d) {
			return
		}
	}
}

// revCandidates returns the undo records of loc's rev file and where to
// start looking: after the parent's record when it is known (the next
// block of a run), else at the block's ordinal among its blk file's records
// shifted by what the last match in this file showed (none: by the blocks
// that have no undo record, genesis in file 0). Core writes a rev file's
// records in the order it connected their blocks and the blk file in the
// order they arrived, the same order but for blocks downloaded out of
// order, so the record is at the start or close to it. refresh walks what
// was appended to the rev file first.
func (d *Dir) revCandidates(loc blkLoc, parent chainhash.Hash, refresh bool) ([]revRec, undoStart, error) {
	d.revMu.Lock()
	defer d.revMu.Unlock()
	rf := d.rev[loc.file]
	if rf == nil || refresh {
		var err error
		if rf, err = d.walkRevLocked(loc.file); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, undoStart{}, fmt.Errorf("%w: rev%05d.dat is missing", errUndoNotInFiles, loc.file)
			}
			return nil, undoStart{}, err
		}
	}
	d.revClock++
	rf.used = d.revClock
	start := undoStart{ordinal: d.blockOrdinalLocked(rf, loc)}
	switch h, ok := d.hints[parent]; {
	case ok && h.file == loc.file:
		start.idx = h.idx + 1
	case start.ordinal < 0:
	case rf.hasDelta:
		start.idx = start.ordinal + rf.delta
	default:
		start.idx = start.ordinal - max(0, len(rf.blkOffs)-len(rf.recs))
	}
	return rf.recs, start, nil
}

// blockOrdinalLocked returns the position of loc's block record among the
// records of its blk file, in file order, or -1 when the file is not
// indexed. The sorted offsets are kept with the rev file's index (and
// counted in its bound) and rebuilt when the blk file's index changed.
func (d *Dir) blockOrdinalLocked(rf *revFile, loc blkLoc) int {
	d.mu.RLock()
	f := d.blk[loc.file]
	if f == nil {
		d.mu.RUnlock()
		return -1
	}
	if rf.blkOffs == nil || rf.blkVersion != f.version {
		d.revRecs -= len(rf.blkOffs)
		offs := make([]uint32, len(f.entries))
		for i, e := range f.entries {
			offs[i] = e.off
		}
		rf.blkOffs, rf.blkVersion = offs, f.version
		d.mu.RUnlock()
		slices.Sort(offs)
		d.revRecs += len(offs)
		d.evictRevLocked(loc.file)
	} else {
		d.mu.RUnlock()
	}
	i, found := slices.BinarySearch(rf.blkOffs, loc.off)
	if !found {
		return -1
	}
	return i
}

// remember notes where b's undo record was, so its child starts there, and
// how far from its block's ordinal (-1: unknown) it was, for blocks of the
// same file without a known parent.
func (d *Dir) remember(hash chainhash.Hash, pos undoPos, ordinal int) {
	d.revMu.Lock()
	defer d.revMu.Unlock()
	if len(d.hints) >= maxUndoHints {
		clear(d.hints)
	}
	d.hints[hash] = pos
	if rf := d.rev[pos.file]; rf != nil && ordinal >= 0 {
		rf.delta, rf.hasDelta = pos.idx-ordinal, true
	}
}

// walkRevLocked walks rev file n from where its last walk stopped and
// keeps the index within maxRevRecords.
func (d *Dir) walkRevLocked(n int) (*revFile, error) {
	fh, err := os.Open(d.revPath(n))
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	rf := d.rev[n]
	if rf == nil {
		rf = &revFile{num: n}
		d.rev[n] = rf
	}
	if !rf.open && rf.size == st.Size() && rf.scanned > 0 {
		return rf, nil
	}
	before := len(rf.recs)
	from := rf.scanned
	if from > st.Size() {
		from, rf.recs = 0, nil
	}
	if from > 0 && rf.open {
		for len(rf.recs) > 0 && int64(rf.recs[len(rf.recs)-1].off) >= from {
			rf.recs = rf.recs[:len(rf.recs)-1]
		}
	}
	lastStart := int64(-1)
	end, stop, err := d.revWalk.walk(newWindowReader(fh, st.Size()), from, func(off int64, size uint32, head []byte) {
		ntx, _, err := wirescan.ReadCompactSize(head)
		if err != nil || ntx > uint64(size) {
			ntx = 1<<32 - 1 // never equal to a block's count
		}
		rf.recs = append(rf.recs, revRec{off: uint32(off), size: size, ntx: uint32(ntx)})
		lastStart = off
	})
	if err != nil {
		return nil, fmt.Errorf("walk rev%05d.dat: %w", n, err)
	}
	rf.size = st.Size()
	rf.open = stop != stopEOF
	rf.scanned = end
	if stop == stopPadding && lastStart >= 0 {
		rf.scanned = lastStart
	}
	d.revRecs += len(rf.recs) - before
	d.evictRevLocked(n)
	return rf, nil
}

// evictRevLocked drops the least recently used rev indexes other than
// keep's until at most maxRevRecords records are held.
func (d *Dir) evictRevLocked(keep int) {
	for d.revRecs > maxRevRecords {
		victim, oldest := -1, ^uint64(0)
		for n, rf := range d.rev {
			if n != keep && rf.used < oldest {
				victim, oldest = n, rf.used
			}
		}
		if victim < 0 {
			return
		}
		d.revRecs -= len(d.rev[victim].recs) + len(d.rev[victim].blkOffs)
		delete(d.rev, victim)
	}
}

// tryUndo reads undo record rec of rev file n and returns b's spent
// scripts if the record is b's: it has b's shape and its checksum names
// b's parent. The shape is read first: a record of another block with as
// many transactions (every full block of a run has about as many) differs
// within its first few transactions' input counts, so it is turned down
// without hashing it.
func (d *Dir) tryUndo(n int, rec revRec, b *wirescan.ScannedBlock) (prev [][]byte, payload []byte, ok bool) {
	d.undoReads.Add(1)
	payload, trailer, ok := d.readUndoPayload(n, rec)
	if !ok {
		return nil, nil, false
	}
	prev, err := prevScriptsFromUndo(payload, b)
	if err != nil {
		return nil, nil, false
	}
	if undoChecksum(b.Header.PrevBlock, payload) != chainhash.Hash(trailer) {
		return nil, nil, false
	}
	return prev, payload, true
}

// readUndoRecord reads undo record rec of rev file n and returns its
// CBlockUndo if its checksum is the one for a child of parent.
func (d *Dir) readUndoRecord(n int, rec revRec, parent chainhash.Hash) ([]byte, bool) {
	payload, trailer, ok := d.readUndoPayload(n, rec)
	return payload, ok && undoChecksum(parent, payload) == chainhash.Hash(trailer)
}

// readUndoPayload reads undo record rec of rev file n: its CBlockUndo and
// the checksum after it, not checked.
func (d *Dir) readUndoPayload(n int, rec revRec) (payload, trailer []byte, ok bool) {
	path := d.revPath(n)
	f, release, err := d.files.acquire(path)
	if err != nil {
		return nil, nil, false
	}
	payload, trailer, err = d.revWalk.readRecord(f, int64(rec.off))
	release()
	if err != nil {
		d.files.forget(path)
		return nil, nil, false
	}
	return payload, trailer, true
}

// undoChecksum is the checksum Core writes after an undo record:
// SHA256d(parent block hash ‖ CBlockUndo).
func undoChecksum(parent chainhash.Hash, undo []byte) chainhash.Hash {
	h := sha256.New()
	h.Write(parent[:])
	h.Write(undo)
	var first [sha256.Size]byte
	h.Sum(first[:0])
	return chainhash.Hash(sha256.Sum256(first[:]))
}

// checkUnambiguous looks, in the rev files around n, for another undo
// record that also fits b (its parent has another child) and differs from
// the one found.
func (d *Dir) checkUnambiguous(n int, found revRec, b *wirescan.ScannedBlock, payload []byte) error {
	want := uint32(len(b.Txids) - 1)
	for _, m := range [...]int{n - 1, n, n + 1} {
		d.revMu.Lock()
		rf, err := d.walkRevLocked(m)
		var recs []revRec
		if err == nil {
			recs = rf.recs
		}
		d.revMu.Unlock()
		for _, rec := range recs {
			if rec.ntx != want || (m == n && rec.off == found.off) {
				continue
			}
			other, ok := d.readUndoRecord(m, rec, b.Header.PrevBlock)
			if !ok || string(other) == string(payload) {
				continue
			}
			if _, err := prevScriptsFromUndo(other, b); err == nil {
				return fmt.Errorf("block %s: %w (rev%05d.dat at %d and rev%05d.dat at %d)", b.Hash, errUndoAmbiguous, n, found.off, m, rec.off)
			}
		}
	}
	return nil
}

// IndexStats returns how many block records and undo records the index
// holds and the bytes its slices take (12 bytes per block and per undo
// record, plus the small fork lists and the hints map, estimated at 64
// bytes an entry).
func (d *Dir) IndexStats() (blocks, undoRecords int, bytes int64) {
	d.mu.RLock()
	for _, f := range d.blk {
		blocks += len(f.entries)
		bytes += int64(cap(f.entries))*12 + int64(cap(f.forks))*4
	}
	d.mu.RUnlock()
	d.revMu.Lock()
	for _, rf := range d.rev {
		undoRecords += len(rf.recs)
		bytes += int64(cap(rf.recs))*12 + int64(cap(rf.blkOffs))*4
	}
	bytes += int64(len(d.hints)) * 64
	d.revMu.Unlock()
	return blocks, undoRecords, bytes
}
