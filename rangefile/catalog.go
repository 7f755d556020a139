package rangefile

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// ErrNoFinalRange is returned while no range is final.
var ErrNoFinalRange = errors.New("rangefile: no range is final yet")

// ErrBusy is returned by Documents when another call is computing them
// and wait is false.
var ErrBusy = errors.New("rangefile: the catalog is busy")

// ReadFunc runs fn with a reader of one committed state of the chain.
type ReadFunc func(fn func(Reader) error) error

// Catalog computes manifest.json and latest for a chain as the publisher
// writes them, keeping what it hashed: a final range's entry is computed
// once (reading and hashing the whole range) and reused while the block
// at its end is unchanged, and the import files are hashed again only when
// the newest final range moves. The first call on a long chain reads
// every final range. A Catalog is safe for concurrent use; calls run one
// at a time.
type Catalog struct {
	nw      Network
	mu      sync.Mutex
	ranges  []catalogRange
	imports [2]catalogImport
}

type catalogRange struct {
	entry      RangeEntry
	endHash    chainhash.Hash
	withTweaks bool
}

type catalogImport struct {
	end     uint32
	endHash chainhash.Hash
	obj     Object // without Data
}

// NewCatalog returns an empty catalog of the chain nw.
func NewCatalog(nw Network) *Catalog { return &Catalog{nw: nw} }

// Documents returns manifest.json and latest of the ranges final under
// tip and depth, reading each range not yet cataloged from its own state
// through read, and sp's tweaks (nil: no silent-payment index). While
// another call runs, it waits for it, or with wait false returns ErrBusy.
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
	c.ranges = c.ranges[:min(len(c.ranges), int(n))]
	entries := make([]RangeEntry, n)
	for i := range n {
		start := i * Size
		e, err := c.rangeEntry(read, sp, int(i), start)
		if err != nil {
			return nil, nil, err
		}
		entries[i] = e
	}
	end := End((n - 1) * Size)
	var imps [2]Object
	for i := range imps {
		if imps[i], err = c.importObject(read, i == 1, end); err != nil {
			return nil, nil, err
		}
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

// rangeEntry returns the entry of range i, from the cache while its end
// block and its tweak coverage are unchanged.
func (c *Catalog) rangeEntry(read ReadFunc, sp TweakIndex, i int, start uint32) (RangeEntry, error) {
	tweaks := CoversTweaks(sp, start)
	var out catalogRange
	err := read(func(r Reader) error {
		h, err := r.HashAt(End(start))
		if err != nil {
			return fmt.Errorf("hash at %d: %w", End(start), err)
		}
		if i < len(c.ranges) && c.ranges[i].endHash == h && c.ranges[i].withTweaks == tweaks {
			out = c.ranges[i]
			return nil
		}
		rg, err := Build(r, tweakIndexIf(sp, tweaks), c.nw.Net, start)
		if err != nil {
			return err
		}
		out = catalogRange{entry: rg.Entry(), endHash: rg.EndBlockHash, withTweaks: tweaks}
		return nil
	})
	if err != nil {
		return RangeEntry{}, err
	}
	if i < len(c.ranges) {
		c.ranges[i] = out
	} else {
		c.ranges = append(c.ranges, out)
	}
	return out.entry, nil
}

// importObject returns the hash of an import file ending at end, from the
// cache while the block at end is unchanged.
func (c *Catalog) importObject(read ReadFunc, filters bool, end uint32) (Object, error) {
	slot := &c.imports[0]
	if filters {
		slot = &c.imports[1]
	}
	var obj Object
	err := read(func(r Reader) error {
		h, err := r.HashAt(end)
		if err != nil {
			return fmt.Errorf("hash at %d: %w", end, err)
		}
		if slot.end == end && slot.endHash == h && slot.obj.Name != "" {
			obj = slot.obj
			return nil
		}
		name := HeadersImportName
		if filters {
			name = FilterHeadersImportName
		}
		h256 := sha256.New()
		if err := WriteImport(h256, r, c.nw.Net, filters, end); err != nil {
			return err
		}
		obj = Object{Name: name}
		h256.Sum(obj.SHA256[:0])
		*slot = catalogImport{end: end, endHash: h, obj: obj}
		return nil
	})
	return obj, err
}

// tweakIndexIf returns sp when the range has tweak objects, nil otherwise.
func tweakIndexIf(sp TweakIndex, tweaks bool) TweakIndex {
	if tweaks {
		return sp
	}
	return nil
}
