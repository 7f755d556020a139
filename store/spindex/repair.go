package spindex

import (
	"bytes"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Repair. A value failing its CRC is never returned (MismatchError); it is
// repaired by dropping the index from the damaged height up (Rewind), so
// that the backfill, which follows the frontier, builds those blocks again
// from the node. Scrub finds damage that no reader met yet. A damaged
// state value is not repaired here: Open fails on it, and the operator
// rebuilds the store (--reindex).

// Rewind drops the entries at height and above in one write transaction
// of its own and returns the new state. When the commitment header just
// below height fails its CRC too (the new state needs it), it rewinds
// below that one as well, down to Start if need be. Rewinding at or above
// Next writes nothing.
func (x *Index) Rewind(height uint32) (State, error) {
	var st State
	err := x.txn(true, func(tx *bolt.Tx, _ Chain) error {
		b, ok, err := openBuckets(tx)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNotEnabled
		}
		if st, err = b.state(); err != nil {
			return err
		}
		next := max(st.Start, height)
		if next >= st.Next {
			return nil
		}
		for next > st.Start {
			_, err := b.header(next - 1)
			if !errors.Is(err, ErrChecksumMismatch) {
				break
			}
			next--
		}
		if err := x.trimTo(tx, next); err != nil {
			return err
		}
		st, err = b.state()
		return err
	})
	if err != nil {
		return State{}, fmt.Errorf("rewind silent-payment index to %d: %w", height, err)
	}
	x.publish(st)
	return st, nil
}

// Scrub checks the CRC of every stored value at heights from..from+n-1
// that the index covers, in one read transaction, and returns the first
// height it did not check (Next once it reached the frontier). It fails
// with the first *MismatchError it meets (errors.Is ErrChecksumMismatch),
// or ErrCorrupt for a value of the wrong shape or missing.
func (x *Index) Scrub(from uint32, n uint32) (uint32, error) {
	next := from
	err := x.view(func(b *buckets, st State, _ Chain) error {
		next = max(from, st.Start)
		end := min(st.Next, next+n) // exclusive
		tc, fc, hc := b.tweaks.Cursor(), b.filters.Cursor(), b.headers.Cursor()
		for ; next < end; next++ {
			k := heightKey(next)
			for _, part := range []struct {
				c    *bolt.Cursor
				what string
			}{{tc, "tweak data"}, {fc, "taproot filter"}} {
				ck, cv := part.c.Seek(k)
				if !bytes.Equal(ck, k) {
					cv = nil
				}
				if _, err := checkData(next, cv, part.what); err != nil {
					return err
				}
			}
			if _, err := cursorHeader(hc, next); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return next, fmt.Errorf("scrub silent-payment index at %d: %w", next, err)
	}
	return next, nil
}
