package rangefile

import (
	"crypto/sha256"
	"encoding"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// ErrNoFinalRange is returned while no range is final.
var ErrNoFinalRange = errors.New("rangefile: no range is final yet")

// ErrBusy is returned by Documents when another call is computing them
// and wait is false.
var ErrBusy = errors.New("rangefile: the catalog is busy")

// ErrWarming is returned by Documents, with wait false, while the
// catalog's warmer (Warm) has more left to hash than one call computes
// inline.
var ErrWarming = errors.New("rangefile: the catalog is warming")

// ReadFunc runs fn with a reader of one committed state of the chain.
type ReadFunc func(fn func(Reader) error) error

// maxInline is how many ranges' worth of hashing (new ranges, and each
// import file's extension by a range) a call of Documents that does not
// wait does itself while a warmer runs (a few seconds on mainnet, well
// within a bulk answer's time); with more left it returns ErrWarming.
const maxInline = 16

// Catalog computes manifest.json and latest for a chain as the publisher
// writes them, keeping what it hashed: a final range's entry is computed
// once (reading and hashing the whole range) and reused while the block
// at its end is unchanged, and an import file's SHA-256 state is kept at
// its end, so that when the newest final range moves only the new
// heights are hashed. Without a warmer, the first call on a long chain
// reads every final range; Warm does that in the background instead. A
// Catalog is safe for concurrent use; calls of Documents run one at a
// time.
type Catalog struct {
	nw Network
	mu sync.Mutex // one Documents at a time; guards the fields below
	// ranges are the entries of ranges 0.. cataloged so far.
	ranges  []catalogRange
	imports [2]catalogImport
	// warmed reports whether a warmer runs (SetWarmer).
	warmed bool
	// rangesHashed and importRunsHashed count the ranges built and the
	// runs of Size import records hashed.
	rangesHashed, importRunsHashed atomic.Uint64
}

type catalogRange struct {
	entry      RangeEntry
	endHash    chainhash.Hash
	withTweaks bool
}

// catalogImport is an import file's hash of heights 0..end, and the
// SHA-256 state after them (to extend it).
type catalogImport struct {
	end     uint32
	endHash chainhash.Hash
	obj     Object // without Data
	state   []byte // the sha256 state, MarshalBinary
}

// CatalogStats counts the hashing a Catalog did.
type CatalogStats struct {
	// RangesHashed is how many times a range was read and hashed.
	RangesHashed uint64
	// ImportRunsHashed is how many runs of up to Size import-file records
	// were read and hashed.
	ImportRunsHashed uint64
}

// NewCatalog returns an empty catalog of the chain nw.
func NewCatalog(nw Network) *Catalog { return &Catalog{nw: nw} }

// Stats returns what the catalog hashed so far.
func (c *Catalog) Stats() CatalogStats {
	return CatalogStats{RangesHashed: c.rangesHashed.Load(), ImportRunsHashed: c.importRunsHashed.Load()}
}

// Documents returns manifest.json and latest of the ranges final under
// tip and depth, reading each range not yet cataloged from its own state
// through read, and sp's tweaks (nil: no silent-payment index). While
// another call runs, it waits for it, or with wait false returns ErrBusy;
// with wait false while a warmer runs and has more left than a few
// ranges' hashing, it returns ErrWarming.
func (c *Catalog) Documents(read ReadFunc, sp TweakIndex, tip, depth uint32, wait bool) (manifest, latest []byte, err error) {
	n := FinalCount(tip, depth)
	if n == 0 {
		return nil, nil, ErrNoFinalRange
	}
	if wait {
		c.mu.Lock()
	} else if !c.mu.TryLock() {
		return nil, nil, ErrBusy
	}
	defer c.mu.Unlock()
	if !wait && c.warmed {
		if left := c.inlineCost(sp, n); left > maxInline {
			return nil, nil, fmt.Errorf("%w: %d of %d ranges cataloged", ErrWarming, min(len(c.ranges), int(n)), n)
		}
	}
	c.ranges = c.ranges[:min(len(c.ranges), int(n))]
	entries := make([]RangeEntry, n)
	for i := range n {
		var cached *catalogRange
		if int(i) < len(c.ranges) {
			cached = &c.ranges[i]
		}
		out, err := c.rangeEntry(read, sp, i*Size, cached)
		if err != nil {
			return nil, nil, err
		}
		if int(i) < len(c.ranges) {
			c.ranges[i] = out
		} else {
			c.ranges = append(c.ranges, out)
		}
		entries[i] = out.entry
	}
	end := End((n - 1) * Size)
	var imps [2]Object
	for i := range imps {
		imp, err := c.importHash(read, i == 1, end, c.imports[i])
		if err != nil {
			return nil, nil, err
		}
		c.imports[i], imps[i] = imp, imp.obj
	}
	// Every entry must still be of the active chain: one state checks
	// the ends of all of them.
	err = read(func(r Reader) error {
		for i := range c.ranges[:n] {
			h, err := r.HashAt(c.ranges[i].entry.End)
			if err != nil {
				return fmt.Errorf("hash at %d: %w", c.ranges[i].entry.End, err)
			}
			if h != c.ranges[i].endHash {
				c.ranges = c.ranges[:i]
				return fmt.Errorf("range %d: %w", i*Size, ErrChainChanged)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	m := NewManifest(c.nw, entries, imps[0], imps[1])
	manifest = m.Encode()
	return manifest, LatestOf(&m, manifest).Encode(), nil
}

// inlineCost returns how many ranges' worth of hashing a Documents call
// for n final ranges has to do: the ranges not cataloged or whose tweak
// coverage changed (sp's index reached them), and each import file's runs
// past its cataloged end (all of them when none is).
func (c *Catalog) inlineCost(sp TweakIndex, n uint32) int {
	cost := max(0, int(n)-len(c.ranges))
	cover := coverage(sp)
	for i := range c.ranges[:min(len(c.ranges), int(n))] {
		if c.ranges[i].withTweaks != cover(uint32(i)*Size) {
			cost++
		}
	}
	for i := range c.imports {
		imp := &c.imports[i]
		switch {
		case imp.obj.Name == "" || imp.end > End((n-1)*Size):
			cost += int(n)
		case imp.end < End((n-1)*Size):
			cost += int((End((n-1)*Size) - imp.end) / Size)
		}
	}
	return cost
}

// rangeEntry returns the entry of the range at start: cached while its end
// block and its tweak coverage are unchanged, else built and hashed.
func (c *Catalog) rangeEntry(read ReadFunc, sp TweakIndex, start uint32, cached *catalogRange) (catalogRange, error) {
	tweaks := CoversTweaks(sp, start)
	var out catalogRange
	err := read(func(r Reader) error {
		h, err := r.HashAt(End(start))
		if err != nil {
			return fmt.Errorf("hash at %d: %w", End(start), err)
		}
		if cached != nil && cached.endHash == h && cached.withTweaks == tweaks {
			out = *cached
			return nil
		}
		c.rangesHashed.Add(1)
		rg, err := Build(r, tweakIndexIf(sp, tweaks), c.nw.Net, start)
		if err != nil {
			return err
		}
		out = catalogRange{entry: rg.Entry(), endHash: rg.EndBlockHash, withTweaks: tweaks}
		return nil
	})
	return out, err
}

// importHash returns the hash of an import file ending at end: prev's
// while the block at end is prev's, prev's state extended by the heights
// past its end while the block at prev's end is unchanged, else hashed
// from height 0. Each run is read from its own state.
func (c *Catalog) importHash(read ReadFunc, filters bool, end uint32, prev catalogImport) (catalogImport, error) {
	var endHash, prevNow chainhash.Hash
	err := read(func(r Reader) error {
		var err error
		if endHash, err = r.HashAt(end); err != nil {
			return fmt.Errorf("hash at %d: %w", end, err)
		}
		if prev.obj.Name != "" && prev.end <= end {
			if prevNow, err = r.HashAt(prev.end); err != nil {
				return fmt.Errorf("hash at %d: %w", prev.end, err)
			}
		}
		return nil
	})
	if err != nil {
		return catalogImport{}, err
	}
	if prev.obj.Name != "" && prev.end == end && prev.endHash == endHash {
		return prev, nil
	}
	h := sha256.New()
	s := NewImportStream(read, c.nw.Net, filters, end, endHash)
	if prev.obj.Name != "" && prev.end < end && prevNow == prev.endHash {
		if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(prev.state); err != nil {
			return catalogImport{}, fmt.Errorf("import hash state: %w", err)
		}
		s.next, s.started, s.prev = uint64(prev.end)+1, true, prev.endHash
	}
	for {
		err := s.fill()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return catalogImport{}, err
		}
		c.importRunsHashed.Add(1)
		_, _ = h.Write(s.buf)
	}
	state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return catalogImport{}, fmt.Errorf("import hash state: %w", err)
	}
	out := catalogImport{end: end, endHash: endHash, obj: Object{Name: ImportName(filters)}, state: state}
	h.Sum(out.obj.SHA256[:0])
	return out, nil
}

// coverage returns CoversTweaks(sp, ·) with sp's coverage read once.
func coverage(sp TweakIndex) func(start uint32) bool {
	if sp == nil {
		return func(uint32) bool { return false }
	}
	first, next := sp.Covered()
	return func(start uint32) bool {
		end := End(start)
		return first != next && end >= first && end < next
	}
}

// tweakIndexIf returns sp when the range has tweak objects, nil otherwise.
func tweakIndexIf(sp TweakIndex, tweaks bool) TweakIndex {
	if tweaks {
		return sp
	}
	return nil
}
