package wirescan

import "fmt"

// Reader reads Bitcoin's serialization in place: fixed-size fields,
// CompactSize integers and counts, length-prefixed byte strings and (Tx,
// Block) transactions and blocks. Every slice it returns is a subslice of
// the bytes it reads, which must not change while those slices are in use.
// Every count is checked against the bytes that remain before anything is
// done with it, so a Reader never allocates from a declared count. A
// failed read leaves the Reader where the failing field began or inside
// it; callers stop at the first error.
//
// The zero Reader reads nothing. A Reader is not safe for concurrent use.
// It lives on the caller's stack; its only allocation is the txid hasher
// of the first witness transaction it hashes.
type Reader struct {
	b   []byte
	off int
	// lenient is NewCountReader's mode: CompactSizes in any encoding, any
	// non-zero witness flag, no superfluous-witness check.
	lenient bool
	txid    *txidHasher // for witness transactions' txids; made on first use
}

// NewReader returns a Reader of b that enforces what Bitcoin Core and
// wire enforce when they deserialize: CompactSizes in their shortest form
// and, in a transaction, a BIP-144 marker only with flag 0x01 and then at
// least one input with a witness. Decoders of untrusted bytes that stand
// on their own use it. FuzzTx and FuzzBlock hold it to wire's acceptance
// and reading (ids, scripts, outpoints) on arbitrary bytes. Whole-input
// rules stay with the caller: End for trailing bytes, and whether a block
// of no transactions is acceptable (wire decodes one; ScanBlock refuses
// it).
func NewReader(b []byte) Reader { return Reader{b: b} }

// NewCountReader returns a Reader of b that checks structure and counts
// only: it accepts CompactSizes in any encoding, takes a zero byte followed
// by any non-zero byte after a transaction's version as a BIP-144 marker
// and flag, and does not require a witness behind them. It is for a walk
// that runs before a decoder which enforces the rest itself (wire, which
// allocates from declared counts before it finds the bytes missing), so
// that the walk refuses nothing the decoder would accept. It accepts every
// input NewReader accepts, reading it the same way.
func NewCountReader(b []byte) Reader { return Reader{b: b, lenient: true} }

// Offset returns how many bytes have been read.
func (r *Reader) Offset() int { return r.off }

// Len returns how many bytes remain.
func (r *Reader) Len() int { return len(r.b) - r.off }

// Rest returns the bytes that remain, in place, without reading them.
func (r *Reader) Rest() []byte { return r.b[r.off:] }

// End returns ErrTrailingData (with the count) unless every byte was read.
func (r *Reader) End() error {
	if left := len(r.b) - r.off; left != 0 {
		return fmt.Errorf("%w: %d after the end", ErrTrailingData, left)
	}
	return nil
}

// Skip reads past n bytes.
func (r *Reader) Skip(n int) error {
	if uint(n) > uint(len(r.b)-r.off) {
		return ErrTruncated
	}
	r.off += n
	return nil
}

// Next reads n bytes and returns them in place (capacity n).
func (r *Reader) Next(n int) ([]byte, error) {
	if uint(n) > uint(len(r.b)-r.off) {
		return nil, ErrTruncated
	}
	b := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return b, nil
}

// CompactSize reads a CompactSize integer (in its shortest form, unless the
// Reader is a NewCountReader).
func (r *Reader) CompactSize() (uint64, error) {
	if r.off < len(r.b) && r.b[r.off] < 0xfd {
		r.off++
		return uint64(r.b[r.off-1]), nil
	}
	v, n, err := readCompactSize(r.b[r.off:], !r.lenient)
	if err != nil {
		return 0, err
	}
	r.off += n
	return v, nil
}

// Count reads a CompactSize count of items that take at least minSize
// (≥ 1) bytes each and checks that that many fit in the bytes that remain
// (ErrCountExceedsData), so the count is safe to allocate for.
func (r *Reader) Count(minSize int) (int, error) {
	v, err := r.CompactSize()
	if err != nil {
		return 0, err
	}
	if left := len(r.b) - r.off; v > uint64(left)/uint64(minSize) {
		return 0, fmt.Errorf("%w: %d items of at least %d bytes, %d bytes left", ErrCountExceedsData, v, minSize, left)
	}
	return int(v), nil
}

// Bytes reads a CompactSize length and returns that many bytes in place
// (capacity their length, so appending to them cannot overwrite what
// follows).
func (r *Reader) Bytes() ([]byte, error) {
	n, err := r.Count(1)
	if err != nil {
		return nil, err
	}
	b := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return b, nil
}
