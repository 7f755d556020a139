package blockfiles

import (
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

// Dir reads Bitcoin Core's blocks directory in place: blk*.dat, rev*.dat
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

// Open prepares to read the blocks directory dir of a node on the
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

// Close closes the block files kept open between reads. The Dir
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
