package store

import (
	"bytes"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Snapshot is one committed state of the store, read in a single bbolt read
// transaction: its tip and every block it returns belong to the same state,
// however many reads it serves and whatever commits or rollbacks run
// meanwhile. Store's own read methods each take a snapshot of their own;
// Read lets a caller answer one request from one snapshot (a REST handler
// that looks a block up, then reads the chain above it up to the tip).
//
// A Snapshot is valid only inside the function given to Read and must not
// be used from other goroutines. Everything it returns is a copy that stays
// valid after Read returns.
type Snapshot struct {
	b *buckets
}

// Read runs fn with a Snapshot of the current committed state and returns
// fn's error. fn must return promptly: while it runs, the snapshot's pages
// stay mapped, and a commit that has to grow the file waits for it.
func (s *Store) Read(fn func(*Snapshot) error) error {
	return s.view(func(b *buckets) error { return fn(&Snapshot{b: b}) })
}

// Tip returns the highest block of the active chain in this snapshot, or
// false on an empty store. It can be ahead of, or behind, Store.Tip, which
// is published just after each commit.
func (v *Snapshot) Tip() (Tip, bool) {
	t, ok, err := v.b.readTip()
	if err != nil {
		return Tip{}, false
	}
	return t, ok
}

// HashAt returns the hash of the active block at height, or ErrNotFound.
func (v *Snapshot) HashAt(height uint32) (chainhash.Hash, error) {
	val := v.b.headers.Get(heightKey(height))
	if val == nil {
		return chainhash.Hash{}, v.b.missing("hash", height)
	}
	hash, _, err := v.b.headerAt(height, val)
	return hash, err
}

// HeightOf returns the height of the block hash and whether it is on the
// active chain (false: it is in the stale set), or ErrNotFound.
func (v *Snapshot) HeightOf(hash chainhash.Hash) (uint32, bool, error) {
	h, ok, err := v.b.activeHeight(hash)
	if err != nil || ok {
		return h, ok, err
	}
	val := v.b.stale.Get(hash[:])
	if val == nil {
		return 0, false, fmt.Errorf("height of %s: %w", hash, ErrNotFound)
	}
	h, _, err = stalePrevAndHeight(hash, val)
	return h, false, err
}

// HeaderAt returns the header of the active block at height, or
// ErrNotFound.
func (v *Snapshot) HeaderAt(height uint32) (wire.BlockHeader, error) {
	val := v.b.headers.Get(heightKey(height))
	if val == nil {
		return wire.BlockHeader{}, v.b.missing("header", height)
	}
	_, hdr, err := v.b.decodeHeaderAt(height, val)
	return hdr, err
}

// Headers returns the active headers at heights start..end inclusive. It
// fails with ErrBadRange if start > end, ErrRangeTooLarge beyond MaxRange
// heights, and ErrNotFound if end is above the tip.
func (v *Snapshot) Headers(start, end uint32) ([]wire.BlockHeader, error) {
	if err := checkRange(start, end); err != nil {
		return nil, fmt.Errorf("headers %d..%d: %w", start, end, err)
	}
	out := make([]wire.BlockHeader, end-start+1)
	err := eachHeight(v.b.headers, start, len(out), v.b.missingHeader, func(h uint32, val []byte) (err error) {
		_, out[h-start], err = v.b.decodeHeaderAt(h, val)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("headers %d..%d: %w", start, end, err)
	}
	return out, nil
}

// FilterByHash returns the record of the block hash, on the active chain
// (true) or in the stale set (false), or ErrNotFound.
func (v *Snapshot) FilterByHash(hash chainhash.Hash) (BlockRecord, bool, error) {
	h, active, err := v.b.activeHeight(hash)
	if err != nil {
		return BlockRecord{}, false, err
	}
	var rec BlockRecord
	switch val := v.b.stale.Get(hash[:]); {
	case active:
		rec, err = v.b.activeRecord(h)
	case val != nil:
		rec, _, err = decodeStale(hash, val)
	default:
		return BlockRecord{}, false, fmt.Errorf("filter of %s: %w", hash, ErrNotFound)
	}
	if err != nil {
		return BlockRecord{}, false, err
	}
	rec.Filter = bytes.Clone(rec.Filter)
	return rec, active, nil
}

// FiltersByHeight returns the active records at heights start..end
// inclusive, ascending, by a sequential cursor scan of each height-keyed
// bucket. It fails with ErrBadRange if start > end, ErrRangeTooLarge beyond
// MaxRange heights and ErrNotFound if end is above the tip. The filters of
// one call share one backing array (each slice is capped at its own
// length).
func (v *Snapshot) FiltersByHeight(start, end uint32) ([]BlockRecord, error) {
	if err := checkRange(start, end); err != nil {
		return nil, fmt.Errorf("filters %d..%d: %w", start, end, err)
	}
	recs := make([]BlockRecord, end-start+1)
	if err := v.b.scanActive(start, recs); err != nil {
		return nil, fmt.Errorf("filters %d..%d: %w", start, end, err)
	}
	detach(recs)
	return recs, nil
}

// FilterHeadersByHeight returns the active filter headers at heights
// start..end inclusive, ascending, with the same errors as FiltersByHeight.
func (v *Snapshot) FilterHeadersByHeight(start, end uint32) ([]chainhash.Hash, error) {
	if err := checkRange(start, end); err != nil {
		return nil, fmt.Errorf("filter headers %d..%d: %w", start, end, err)
	}
	out := make([]chainhash.Hash, end-start+1)
	if err := v.b.scanFilterHeaders(start, out); err != nil {
		return nil, fmt.Errorf("filter headers %d..%d: %w", start, end, err)
	}
	return out, nil
}

// spChain is the active chain as store/spindex asks about it.
type spChain struct{ b *buckets }

func (c spChain) HashAt(h uint32) (chainhash.Hash, bool, error) {
	if v := c.b.headers.Get(heightKey(h)); v != nil {
		hash, _, err := c.b.headerAt(h, v)
		return hash, err == nil, err
	}
	return chainhash.Hash{}, false, nil
}

func (c spChain) HeightOf(hash chainhash.Hash) (uint32, bool, error) { return c.b.activeHeight(hash) }
