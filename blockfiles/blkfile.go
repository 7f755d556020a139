package blockfiles

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/btcsuite/btcd/wire/v2"
)

// Bitcoin Core's block files (src/node/blockstorage.cpp): blkNNNNN.dat holds
// records of network magic, a 4-byte little-endian size and a serialized
// block; revNNNNN.dat holds records of magic, size, a CBlockUndo and a
// 32-byte checksum, SHA256d(parent block hash ‖ CBlockUndo). Since v28 both
// are XORed with the 8-byte key in xor.dat by absolute file offset; the
// preallocated tail (16 MiB chunks for blk, 1 MiB for rev) stays raw zero
// bytes until written.

// recordHeaderSize is the magic and size in front of every record.
const recordHeaderSize = 8

// undoChecksumSize is the SHA256d after every undo record.
const undoChecksumSize = 32

// Bounds on declared record sizes. A block record holds at most a
// consensus-sized block; an undo record's CBlockUndo has no consensus
// bound (a coin can be far larger than the input spending it), so it is
// bounded to keep one read's memory sane: larger records are treated as not
// readable and their block comes from the fallback source.
const (
	minBlockRecord = wire.MaxBlockHeaderPayload + 1
	maxBlockRecord = wire.MaxBlockPayload
	maxUndoRecord  = 256 << 20
)

// xorKey is Core's block-file obfuscation key (blocks/xor.dat, Core >= 28).
// The zero key leaves the bytes as they are (files of older versions, and
// -blocksxor=0).
type xorKey [8]byte

// apply XORs b, which sits at file offset off, with the key in place.
func (k xorKey) apply(b []byte, off int64) {
	if k == (xorKey{}) {
		return
	}
	// The key rotated so that its first byte lines up with b[0].
	var rot [8]byte
	for i := range rot {
		rot[i] = k[(off+int64(i))%8]
	}
	w := binary.LittleEndian.Uint64(rot[:])
	i := 0
	for ; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], binary.LittleEndian.Uint64(b[i:])^w)
	}
	for ; i < len(b); i++ {
		b[i] ^= rot[i%8]
	}
}

// readXORKey reads dir/xor.dat. A missing file means plain files (Core
// before v28); any other size than 8 bytes is an error.
func readXORKey(dir string) (xorKey, bool, error) {
	raw, err := os.ReadFile(dir + string(os.PathSeparator) + "xor.dat")
	if errors.Is(err, os.ErrNotExist) {
		return xorKey{}, false, nil
	}
	if err != nil {
		return xorKey{}, false, err
	}
	if len(raw) != 8 {
		return xorKey{}, false, fmt.Errorf("xor.dat has %d bytes, want 8", len(raw))
	}
	return xorKey(raw), true, nil
}

// recordStop says why a walk over a file's records ended.
type recordStop int

const (
	// stopEOF: the last record ends exactly at the end of the file.
	stopEOF recordStop = iota
	// stopPadding: 8 raw zero bytes (Core's preallocated tail) where a
	// record header should start.
	stopPadding
	// stopPartial: a record header or body that the file does not hold
	// yet: Core is writing it, or crashed while it did.
	stopPartial
	// stopGarbage: bytes that are no record header (wrong magic, a size
	// out of bounds).
	stopGarbage
)

func (s recordStop) String() string {
	switch s {
	case stopEOF:
		return "end of file"
	case stopPadding:
		return "zero padding"
	case stopPartial:
		return "partial record"
	}
	return "unexpected bytes"
}

// windowReader reads a file through a one-page window, so that walking many
// small records (early mainnet blocks, coinbase-only undo records) costs one
// pread per page rather than one per record, while walking large ones reads
// only the page at each record's start.
type windowReader struct {
	r     io.ReaderAt
	size  int64
	buf   []byte
	start int64 // file offset of buf[0]
	n     int   // valid bytes in buf
}

func newWindowReader(r io.ReaderAt, size int64) *windowReader {
	return &windowReader{r: r, size: size, buf: make([]byte, 4<<10)}
}

// peek returns up to n bytes at off (fewer at the end of the file), valid
// until the next call. n must not exceed the window.
func (w *windowReader) peek(off int64, n int) ([]byte, error) {
	if off >= w.size {
		return nil, nil
	}
	n = int(min(int64(n), w.size-off))
	if off < w.start || off+int64(n) > w.start+int64(w.n) {
		m, err := w.r.ReadAt(w.buf, off)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		w.start, w.n = off, m
		if m < n {
			n = m
		}
	}
	return w.buf[off-w.start : off-w.start+int64(n)], nil
}

// recordWalk describes one pass over a file's records.
type recordWalk struct {
	key   xorKey
	magic [4]byte
	// minSize and maxSize bound the declared size; the walk stops at
	// anything outside as garbage.
	minSize, maxSize uint32
	// trailer is what follows the payload (the undo checksum).
	trailer int
	// peek is how many payload bytes visit gets (fewer if the record is
	// shorter).
	peek int
}

// walk reads records of w from off until the end of the file, the zero
// padding, a partial record or garbage, calling visit for every complete
// record with its offset, its payload size and the first bytes of the
// payload, de-obfuscated. It returns where it stopped and why.
func (rw recordWalk) walk(r *windowReader, off int64, visit func(off int64, size uint32, head []byte)) (int64, recordStop, error) {
	head := make([]byte, recordHeaderSize+rw.peek)
	for {
		if off >= r.size {
			return off, stopEOF, nil
		}
		b, err := r.peek(off, len(head))
		if err != nil {
			return off, stopPartial, err
		}
		if len(b) < recordHeaderSize {
			if allZero(b) {
				return off, stopPadding, nil
			}
			return off, stopPartial, nil
		}
		if allZero(b[:recordHeaderSize]) {
			return off, stopPadding, nil
		}
		n := copy(head, b)
		rw.key.apply(head[:n], off)
		if [4]byte(head[:4]) != rw.magic {
			return off, stopGarbage, nil
		}
		size := binary.LittleEndian.Uint32(head[4:8])
		if size < rw.minSize || size > rw.maxSize {
			return off, stopGarbage, nil
		}
		end := off + recordHeaderSize + int64(size) + int64(rw.trailer)
		if end > r.size {
			return off, stopPartial, nil
		}
		visit(off, size, head[recordHeaderSize:min(n, recordHeaderSize+int(size))])
		off = end
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// readRecord reads the record at off of f whole (header, payload and
// trailer), de-obfuscated, and returns its payload and trailer. It checks
// the magic and that the size is within bounds and held by the file.
func (rw recordWalk) readRecord(f io.ReaderAt, off int64) (payload, trailer []byte, err error) {
	var hdr [recordHeaderSize]byte
	if _, err := f.ReadAt(hdr[:], off); err != nil {
		return nil, nil, fmt.Errorf("record header at %d: %w", off, err)
	}
	rw.key.apply(hdr[:], off)
	if [4]byte(hdr[:4]) != rw.magic {
		return nil, nil, fmt.Errorf("no record at %d (magic %x)", off, hdr[:4])
	}
	size := binary.LittleEndian.Uint32(hdr[4:])
	if size < rw.minSize || size > rw.maxSize {
		return nil, nil, fmt.Errorf("record at %d declares %d bytes", off, size)
	}
	buf := make([]byte, int(size)+rw.trailer)
	if _, err := f.ReadAt(buf, off+recordHeaderSize); err != nil {
		return nil, nil, fmt.Errorf("record at %d (%d bytes): %w", off, size, err)
	}
	rw.key.apply(buf, off+recordHeaderSize)
	return buf[:size:size], buf[size:], nil
}
