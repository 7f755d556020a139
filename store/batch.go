package store

import (
	"encoding/binary"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/wireframe"
)

// Layout of one record's slot in an encodedBatch arena: the height key,
// the headers value (hash || header || CRC32C), the filterheaders value (filter
// header || filter hash || CRC32C) and the checksums value, back to back.
const (
	slotKeyAt         = 0
	slotHeaderValueAt = slotKeyAt + heightLen
	slotHeaderAt      = slotHeaderValueAt + hashLen
	slotFilterValueAt = slotHeaderValueAt + headerValueLen
	slotFilterHashAt  = slotFilterValueAt + hashLen
	slotChecksumAt    = slotFilterValueAt + filterHeaderValueLen
	slotLen           = slotChecksumAt + checksumValueLen
)

// encodedBatch holds the keys and values CommitBatch writes for a batch,
// encoded once (while checking it, before the write lock) into one arena:
// one allocation per batch instead of three per record. bbolt keeps
// references to the values it is given until the transaction ends, so an
// encodedBatch must outlive the transaction that writes it.
type encodedBatch struct {
	arena []byte
}

// newEncodedBatch returns a batch of n records whose slots are not yet
// filled.
func newEncodedBatch(n int) encodedBatch {
	return encodedBatch{arena: make([]byte, n*slotLen)}
}

func (e encodedBatch) slot(i int) []byte {
	return e.arena[i*slotLen : (i+1)*slotLen : (i+1)*slotLen]
}

// encode fills slot i from r, except the filter hash (setFilterHash), and
// returns the hash of r's header, computed from the encoded header.
func (e encodedBatch) encode(i int, r *BlockRecord) chainhash.Hash {
	s := e.slot(i)
	binary.BigEndian.PutUint32(s[slotKeyAt:], r.Height)
	copy(s[slotHeaderValueAt:slotHeaderAt], r.Hash[:])
	hdr := s[slotHeaderAt : slotHeaderAt+headerLen]
	putHeader(hdr, &r.Header)
	putHeaderCRC(s[slotHeaderValueAt:slotFilterValueAt], r.Height)
	copy(s[slotFilterValueAt:slotFilterHashAt], r.FilterHeader[:])
	return chainhash.DoubleHashH(hdr)
}

// setFilterHash completes the filterheaders value of record r, slot i,
// with the filter hash h and the value's CRC32C.
func (e encodedBatch) setFilterHash(i int, r *BlockRecord, h chainhash.Hash) {
	putFilterHeaderValue(e.slot(i)[slotFilterValueAt:slotChecksumAt], r.Height, &r.FilterHeader, &h)
}

// setChecksum fills the checksums value of record r, slot i, with its
// cfilter checksum and CRC32Cs.
func (e encodedBatch) setChecksum(i int, r *BlockRecord, sum wireframe.Checksum) {
	putChecksumValue(e.slot(i)[slotChecksumAt:], r.Height, sum, r.Filter)
}

// filterHash returns the filter hash of record i.
func (e encodedBatch) filterHash(i int) chainhash.Hash {
	return chainhash.Hash(e.slot(i)[slotFilterHashAt : slotFilterHashAt+hashLen])
}

// checksumValue returns the checksums value of record i: its cfilter
// checksum and CRC32Cs.
func (e encodedBatch) checksumValue(i int) []byte {
	s := e.slot(i)
	return s[slotChecksumAt:slotLen:slotLen]
}

// heightKey returns the headers, filters and filterheaders key of record i
// (the heights value).
func (e encodedBatch) heightKey(i int) []byte {
	s := e.slot(i)
	return s[slotKeyAt:slotHeaderValueAt:slotHeaderValueAt]
}

// headerValue returns the headers value of record i: hash || header ||
// CRC32C.
func (e encodedBatch) headerValue(i int) []byte {
	s := e.slot(i)
	return s[slotHeaderValueAt:slotFilterValueAt:slotFilterValueAt]
}

// filterHeaderValue returns the filterheaders value of record i:
// filter header || filter hash || CRC32C.
func (e encodedBatch) filterHeaderValue(i int) []byte {
	s := e.slot(i)
	return s[slotFilterValueAt:slotChecksumAt:slotChecksumAt]
}
