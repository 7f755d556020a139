package spindex

import (
	"bytes"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	bolt "go.etcd.io/bbolt"
)

// Reads. Each takes one read transaction of the store, so its answer is of
// one committed state; each checks the CRC of every value it returns and
// returns copies. They fail with ErrNotEnabled on a file without the
// index and ErrNotFound outside Start..Next-1.

// TweakRecord is one block's tweak data.
type TweakRecord struct {
	Height    uint32
	BlockHash chainhash.Hash
	// TweakData is the block's tweak data (silentpay.ParseTweakData reads
	// it).
	TweakData []byte
}

// FilterRecord is one block's taproot filter.
type FilterRecord struct {
	Height    uint32
	BlockHash chainhash.Hash
	// Filter is in BIP-158 wire form.
	Filter []byte
}

// view runs fn on the index's buckets and state in one read transaction.
func (x *Index) view(fn func(b *buckets, st State, chain Chain) error) error {
	return x.txn(false, func(tx *bolt.Tx, chain Chain) error {
		b, ok, err := openBuckets(tx)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNotEnabled
		}
		st, err := b.state()
		if err != nil {
			return err
		}
		return fn(b, st, chain)
	})
}

// checkRange checks start..end (inclusive) against MaxRange and st.
func checkRange(start, end uint32, st State) error {
	if start > end {
		return fmt.Errorf("%w: start %d above end %d", ErrBadRange, start, end)
	}
	if end-start >= MaxRange {
		return fmt.Errorf("%w: %d heights from %d, at most %d", ErrRangeTooLarge, uint64(end-start)+1, start, MaxRange)
	}
	if start < st.Start || end >= st.Next {
		return fmt.Errorf("heights %d..%d, indexed %d..%d: %w", start, end, st.Start, int64(st.Next)-1, ErrNotFound)
	}
	return nil
}

// TweakData returns the tweak data of heights start..end inclusive, at
// most MaxRange of them (block-dn's 2,000-block ranges). ErrNotFound when
// any of them is not indexed: a caller serving the tip's partial range
// asks up to State's IndexedUpTo.
func (x *Index) TweakData(start, end uint32) ([]TweakRecord, error) {
	var out []TweakRecord
	err := x.view(func(b *buckets, st State, _ Chain) error {
		if err := checkRange(start, end, st); err != nil {
			return err
		}
		out = make([]TweakRecord, 0, end-start+1)
		tc, hc := b.tweaks.Cursor(), b.headers.Cursor()
		for h := start; ; h++ {
			k := heightKey(h)
			tk, tv := tc.Seek(k)
			if !bytes.Equal(tk, k) {
				tv = nil
			}
			data, err := checkData(h, tv, "tweak data")
			if err != nil {
				return err
			}
			rec, err := cursorHeader(hc, h)
			if err != nil {
				return err
			}
			out = append(out, TweakRecord{Height: h, BlockHash: rec.BlockHash, TweakData: bytes.Clone(data)})
			if h == end {
				return nil
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("tweak data %d..%d: %w", start, end, err)
	}
	return out, nil
}

// cursorHeader reads the commitment header at h with c.
func cursorHeader(c *bolt.Cursor, h uint32) (HeaderRecord, error) {
	k := heightKey(h)
	hk, hv := c.Seek(k)
	if !bytes.Equal(hk, k) {
		return HeaderRecord{}, fmt.Errorf("%w: commitment header at %d missing inside the index", ErrCorrupt, h)
	}
	return decodeHeader(h, hv)
}

// FilterByHeight returns the taproot filter of the active block at
// height.
func (x *Index) FilterByHeight(height uint32) (FilterRecord, error) {
	var out FilterRecord
	err := x.view(func(b *buckets, st State, _ Chain) (err error) {
		out, err = b.filterAt(height, st)
		return err
	})
	if err != nil {
		return FilterRecord{}, fmt.Errorf("taproot filter at %d: %w", height, err)
	}
	return out, nil
}

// FilterByHash returns the taproot filter of the active block hash.
func (x *Index) FilterByHash(hash chainhash.Hash) (FilterRecord, error) {
	var out FilterRecord
	err := x.view(func(b *buckets, st State, chain Chain) error {
		h, ok, err := chain.HeightOf(hash)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("block not on the active chain: %w", ErrNotFound)
		}
		if out, err = b.filterAt(h, st); err != nil {
			return err
		}
		if out.BlockHash != hash {
			return fmt.Errorf("%w: entry at %d is of block %s", ErrCorrupt, h, out.BlockHash)
		}
		return nil
	})
	if err != nil {
		return FilterRecord{}, fmt.Errorf("taproot filter of %s: %w", hash, err)
	}
	return out, nil
}

func (b *buckets) filterAt(h uint32, st State) (FilterRecord, error) {
	if err := checkRange(h, h, st); err != nil {
		return FilterRecord{}, err
	}
	f, err := checkData(h, b.filters.Get(heightKey(h)), "taproot filter")
	if err != nil {
		return FilterRecord{}, err
	}
	rec, err := b.header(h)
	if err != nil {
		return FilterRecord{}, err
	}
	return FilterRecord{Height: h, BlockHash: rec.BlockHash, Filter: bytes.Clone(f)}, nil
}

// Headers returns the commitment chain's entries at heights start..end
// inclusive, at most MaxRange of them.
func (x *Index) Headers(start, end uint32) ([]HeaderRecord, error) {
	var out []HeaderRecord
	err := x.view(func(b *buckets, st State, _ Chain) error {
		if err := checkRange(start, end, st); err != nil {
			return err
		}
		out = make([]HeaderRecord, 0, end-start+1)
		c := b.headers.Cursor()
		for h := start; ; h++ {
			rec, err := cursorHeader(c, h)
			if err != nil {
				return err
			}
			out = append(out, rec)
			if h == end {
				return nil
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("commitment headers %d..%d: %w", start, end, err)
	}
	return out, nil
}

// Checkpoints returns the commitment headers at every multiple of
// CheckpointInterval from Start up to the height of stop, an active block
// the index covers, as cfcheckpt does for filter headers. At most MaxRange
// are returned (ErrRangeTooLarge beyond: two million blocks).
func (x *Index) Checkpoints(stop chainhash.Hash) ([]HeaderRecord, error) {
	var out []HeaderRecord
	err := x.view(func(b *buckets, st State, chain Chain) error {
		stopHeight, ok, err := chain.HeightOf(stop)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("stop not on the active chain: %w", ErrNotFound)
		}
		if stopHeight < st.Start || stopHeight >= st.Next {
			return fmt.Errorf("stop height %d, indexed %d..%d: %w", stopHeight, st.Start, int64(st.Next)-1, ErrNotFound)
		}
		first := (st.Start + CheckpointInterval - 1) / CheckpointInterval * CheckpointInterval
		if first > stopHeight {
			return nil
		}
		if n := (stopHeight-first)/CheckpointInterval + 1; n > MaxRange {
			return fmt.Errorf("%w: %d checkpoints, at most %d", ErrRangeTooLarge, n, MaxRange)
		}
		c := b.headers.Cursor()
		for h := uint64(first); h <= uint64(stopHeight); h += CheckpointInterval {
			rec, err := cursorHeader(c, uint32(h))
			if err != nil {
				return err
			}
			out = append(out, rec)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("commitment checkpoints to %s: %w", stop, err)
	}
	return out, nil
}
