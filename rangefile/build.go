package rangefile

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// ErrChainChanged is returned when the reads of one range do not belong
// to one chain (a reorg between two reads of a reader that is not one
// committed state).
var ErrChainChanged = errors.New("rangefile: the chain changed during the read")

// ErrShortRead is returned when a reader answers fewer heights than asked.
var ErrShortRead = errors.New("rangefile: short read")

// Reader reads the active chain, every call from one committed state.
// Ranges hold at most Size heights.
type Reader interface {
	// HashAt returns the hash of the active block at height.
	HashAt(height uint32) (chainhash.Hash, error)
	// Headers returns the block headers at start..end inclusive.
	Headers(start, end uint32) ([]wire.BlockHeader, error)
	// FilterHeadersByHeight returns the filter headers at start..end.
	FilterHeadersByHeight(start, end uint32) ([]chainhash.Hash, error)
	// Filters returns the basic filters (BIP-158 wire form) at start..end.
	Filters(start, end uint32) ([][]byte, error)
}

// BlockTweaks is one block's silent-payment tweaks.
type BlockTweaks struct {
	Hash   chainhash.Hash
	Tweaks []Tweak
}

// TweakIndex reads the silent-payment index.
type TweakIndex interface {
	// Covered returns the indexed heights, first..next-1.
	Covered() (first, next uint32)
	// BlockTweaks returns the tweaks of the blocks at start..end, all
	// indexed heights.
	BlockTweaks(start, end uint32) ([]BlockTweaks, error)
}

// Object is one named object and its bytes.
type Object struct {
	Name   string
	Data   []byte
	SHA256 [32]byte
}

// newObject names data and hashes it.
func newObject(name string, data []byte) Object {
	return Object{Name: name, Data: data, SHA256: sha256.Sum256(data)}
}

// Range is the objects of one final range, with what its manifest entry
// commits to.
type Range struct {
	Start, End      uint32
	EndBlockHash    chainhash.Hash
	EndFilterHeader chainhash.Hash
	Objects         []Object
}

// Entry returns the range's manifest entry.
func (r *Range) Entry() RangeEntry {
	e := RangeEntry{Start: r.Start, End: r.End, EndBlockHash: r.EndBlockHash.String(),
		EndFilterHeader: r.EndFilterHeader.String(), Objects: make(map[string]string, len(r.Objects))}
	for i := range r.Objects {
		e.Objects[r.Objects[i].Name] = hexOf(r.Objects[i].SHA256)
	}
	return e
}

// CoversTweaks reports whether the silent-payment index sp (nil: off) has
// tweak objects for the range starting at start: it holds the range's end
// and the range does not lie wholly below its first height.
func CoversTweaks(sp TweakIndex, start uint32) bool {
	if sp == nil {
		return false
	}
	first, next := sp.Covered()
	end := End(start)
	return first != next && end >= first && end < next
}

// Build reads the range starting at start (a multiple of Size) from r and
// sp (nil: no silent-payment index) and returns its objects, in the order
// headers, filter headers, filters, tweaks by dust level.
func Build(r Reader, sp TweakIndex, net wire.BitcoinNet, start uint32) (Range, error) {
	if start%Size != 0 {
		return Range{}, fmt.Errorf("rangefile: range start %d is not a multiple of %d", start, Size)
	}
	end := End(start)
	rg := Range{Start: start, End: end}
	hs, err := r.Headers(start, end)
	if err != nil {
		return rg, fmt.Errorf("headers %d..%d: %w", start, end, err)
	}
	if len(hs) != Size {
		return rg, fmt.Errorf("headers %d..%d: %d of them: %w", start, end, len(hs), ErrShortRead)
	}
	hdrs, err := AppendHeaders(make([]byte, 0, Size*BlockHeaderSize), hs)
	if err != nil {
		return rg, err
	}
	if rg.EndBlockHash, err = r.HashAt(end); err != nil {
		return rg, fmt.Errorf("hash at %d: %w", end, err)
	}
	if hs[len(hs)-1].BlockHash() != rg.EndBlockHash {
		return rg, fmt.Errorf("headers %d..%d: %w", start, end, ErrChainChanged)
	}
	fhs, err := r.FilterHeadersByHeight(start, end)
	if err != nil {
		return rg, fmt.Errorf("filter headers %d..%d: %w", start, end, err)
	}
	if len(fhs) != Size {
		return rg, fmt.Errorf("filter headers %d..%d: %d of them: %w", start, end, len(fhs), ErrShortRead)
	}
	rg.EndFilterHeader = fhs[len(fhs)-1]
	filters, err := r.Filters(start, end)
	if err != nil {
		return rg, fmt.Errorf("filters %d..%d: %w", start, end, err)
	}
	if len(filters) != Size {
		return rg, fmt.Errorf("filters %d..%d: %d of them: %w", start, end, len(filters), ErrShortRead)
	}
	n := 0
	for _, f := range filters {
		n += len(f) + 9
	}
	fdata := make([]byte, 0, n)
	for _, f := range filters {
		fdata = AppendFilter(fdata, f)
	}
	rg.Objects = append(rg.Objects,
		newObject(HeadersName(start), hdrs),
		newObject(FilterHeadersName(start), AppendFilterHeaders(make([]byte, 0, Size*FilterHeaderSize), fhs)),
		newObject(FiltersName(start), fdata))
	if !CoversTweaks(sp, start) {
		return rg, nil
	}
	tweaks, err := TweakFiles(sp, net, start, rg.EndBlockHash)
	if err != nil {
		return rg, err
	}
	for i, dust := range DustLevels {
		rg.Objects = append(rg.Objects, newObject(TweaksName(dust, start), tweaks[i]))
	}
	return rg, nil
}

// TweakFiles returns the tweak files of the range starting at start, one
// per dust level: block-dn's header, then an empty record for each height
// below the index's first height, then each block's record. endHash is the
// active block hash at the range's end, which the index's last block must
// have.
func TweakFiles(sp TweakIndex, net wire.BitcoinNet, start uint32, endHash chainhash.Hash) ([len(DustLevels)][]byte, error) {
	var out [len(DustLevels)][]byte
	first, _ := sp.Covered()
	end := End(start)
	lo := max(start, first)
	blocks, err := sp.BlockTweaks(lo, end)
	if err != nil {
		return out, fmt.Errorf("silent-payment tweaks %d..%d: %w", lo, end, err)
	}
	if len(blocks) != int(end-lo)+1 {
		return out, fmt.Errorf("silent-payment tweaks %d..%d: %d of them: %w", lo, end, len(blocks), ErrShortRead)
	}
	if blocks[len(blocks)-1].Hash != endHash {
		return out, fmt.Errorf("silent-payment block at %d: %w", end, ErrChainChanged)
	}
	for i, dust := range DustLevels {
		b := AppendBlockDNHeader(nil, uint32(net), start, dust)
		for h := start; h < lo; h++ {
			b = append(b, 0)
		}
		for j := range blocks {
			b = AppendBlockDNRecord(b, blocks[j].Tweaks, dust)
		}
		out[i] = b
	}
	return out, nil
}

// BuildImport returns the neutrino import file (headers, or filter headers
// when filters) of heights 0..end, named as the layout's import object.
func BuildImport(r Reader, net wire.BitcoinNet, filters bool, end uint32) (Object, error) {
	name, rec := HeadersImportName, BlockHeaderSize
	if filters {
		name, rec = FilterHeadersImportName, FilterHeaderSize
	}
	buf := bytes.NewBuffer(make([]byte, 0, NeutrinoMetadataSize+rec*(int(end)+1)))
	if err := WriteImport(buf, r, net, filters, end); err != nil {
		return Object{}, err
	}
	return newObject(name, buf.Bytes()), nil
}

// WriteImport writes the import file BuildImport returns to w, a range
// of Size heights at a time (a hash, to know its SHA-256 without holding
// it).
func WriteImport(w io.Writer, r Reader, net wire.BitcoinNet, filters bool, end uint32) error {
	return writeImportRuns(w, r, net, filters, end)
}

func sha256Sum(b []byte) [32]byte { return sha256.Sum256(b) }
