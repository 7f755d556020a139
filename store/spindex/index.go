package spindex

import (
	"errors"
	"fmt"
	"sync"

	"github.com/btcsuite/btcd/chainhash/v2"
	bolt "go.etcd.io/bbolt"
)

// Chain answers the index's questions about the store's active chain
// inside one of the store's transactions.
type Chain interface {
	// HashAt returns the hash of the active block at height, false when
	// the chain does not reach it.
	HashAt(height uint32) (chainhash.Hash, bool, error)
	// HeightOf returns the height of an active block, false for a hash
	// not on the active chain.
	HeightOf(hash chainhash.Hash) (uint32, bool, error)
}

// Txn runs fn in one of the store's transactions, read-write if write
// (serialised with the store's other writes), with the store's guards
// (panics on damaged pages become errors).
type Txn func(write bool, fn func(tx *bolt.Tx, chain Chain) error) error

// Index is the silent-payment index of one store file. Its methods are
// safe for concurrent use; it caches the committed State.
type Index struct {
	txn Txn

	mu      sync.Mutex
	state   State
	enabled bool
}

// Open returns the index of the store behind txn with its committed
// state loaded, after Check.
func Open(txn Txn) (*Index, error) {
	x := &Index{txn: txn}
	err := txn(false, func(tx *bolt.Tx, _ Chain) error {
		b, ok, err := openBuckets(tx)
		if err != nil || !ok {
			return err
		}
		st, err := b.state()
		if err != nil {
			return err
		}
		x.publish(st)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("silent-payment index: %w", err)
	}
	if err := x.Check(); err != nil {
		return nil, err
	}
	return x, nil
}

// State returns the committed state, and false when the index was never
// enabled on this file.
func (x *Index) State() (State, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.state, x.enabled
}

func (x *Index) publish(st State) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.state, x.enabled = st, true
}

// publishOnCommit publishes st once tx has committed.
func (x *Index) publishOnCommit(tx *bolt.Tx, st State) {
	tx.OnCommit(func() { x.publish(st) })
}

// Enable creates the index starting at start, or checks that the file's
// index starts there. It fails with ErrStartHeight for another start.
func (x *Index) Enable(start uint32) (State, error) {
	var st State
	err := x.txn(true, func(tx *bolt.Tx, _ Chain) error {
		b, ok, err := openBuckets(tx)
		if err != nil {
			return err
		}
		if ok {
			if st, err = b.state(); err != nil {
				return err
			}
			if st.Start != start {
				return fmt.Errorf("%w: the file's starts at %d, want %d", ErrStartHeight, st.Start, start)
			}
			return nil
		}
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %q: %w", name, err)
			}
		}
		st = State{Start: start, Next: start}
		x.publishOnCommit(tx, st)
		return tx.Bucket(bucketMeta).Put(keyState, stateValue(st))
	})
	if err != nil {
		return State{}, fmt.Errorf("enable silent-payment index at %d: %w", start, err)
	}
	x.publish(st)
	return st, nil
}

// Check drops the entries whose block is no longer the active chain's at
// their height (an older build moved the tip without trimming the index),
// keeping those below the highest one that still is; a commitment header
// failing its CRC met on the way down is dropped with them. It writes only when
// there is something to drop.
func (x *Index) Check() error {
	var next uint32
	stale := false
	err := x.txn(false, func(tx *bolt.Tx, chain Chain) error {
		var err error
		next, stale, err = x.firstStale(tx, chain)
		return err
	})
	if err == nil && stale {
		err = x.txn(true, func(tx *bolt.Tx, chain Chain) error {
			if next, stale, err = x.firstStale(tx, chain); err != nil || !stale {
				return err
			}
			return x.trimTo(tx, next)
		})
	}
	if err != nil {
		return fmt.Errorf("check silent-payment index: %w", err)
	}
	return nil
}

// firstStale walks the index down from its top and returns what Next
// must become (one above the highest entry whose block is still active)
// and whether that drops anything.
func (x *Index) firstStale(tx *bolt.Tx, chain Chain) (uint32, bool, error) {
	b, ok, err := openBuckets(tx)
	if err != nil || !ok {
		return 0, false, err
	}
	st, err := b.state()
	if err != nil {
		return 0, false, err
	}
	h := st.Next
	for ; h > st.Start; h-- {
		rec, err := b.header(h - 1)
		if errors.Is(err, ErrChecksumMismatch) {
			continue // a damaged top entry is dropped too: the backfill rebuilds it
		}
		if err != nil {
			return 0, false, err
		}
		hash, ok, err := chain.HashAt(h - 1)
		if err != nil {
			return 0, false, err
		}
		if ok && hash == rec.BlockHash {
			break
		}
	}
	return h, h != st.Next, nil
}

// Connect appends blk as the block hash at height inside the store's
// write transaction tx, which CommitBatch and Reorg call for each record
// they connect, in height order. A nil blk, a file without the index, a
// height below Start or one that is not Next writes nothing (the
// backfill covers it later). It fails with ErrInvalidEntry or
// ErrHeaderMismatch, and the store's transaction then writes nothing.
func (x *Index) Connect(tx *bolt.Tx, height uint32, hash chainhash.Hash, blk *Block) error {
	if blk == nil {
		return nil
	}
	b, ok, err := openBuckets(tx)
	if err != nil || !ok {
		return err
	}
	st, err := b.state()
	if err != nil {
		return err
	}
	if height != st.Next {
		return nil
	}
	if st, err = b.put(st, hash, blk); err != nil {
		return err
	}
	x.publishOnCommit(tx, st)
	return nil
}

// put writes blk as the block hash at st.Next and returns the new state.
func (b *buckets) put(st State, hash chainhash.Hash, blk *Block) (State, error) {
	h := st.Next
	for _, part := range []struct {
		what string
		v    []byte
	}{{"tweak data", blk.TweakData}, {"taproot filter", blk.Filter}} {
		if len(part.v) == 0 || len(part.v) > MaxValueSize {
			return State{}, fmt.Errorf("%w: block %s at %d: %s of %d bytes, want 1..%d", ErrInvalidEntry, hash, h, part.what, len(part.v), MaxValueSize)
		}
	}
	tweakHash, filterHash, commitment := blk.Commitment()
	rec := HeaderRecord{Height: h, BlockHash: hash, Header: blk.Header, TweakHash: tweakHash, FilterHash: filterHash}
	if want := ChainHeader(commitment, st.Header); blk.Header != want {
		return State{}, fmt.Errorf("%w: block %s at %d: header %s, want %s", ErrHeaderMismatch, hash, h, blk.Header, want)
	}
	k := heightKey(h)
	if err := b.tweaks.Put(k, dataValue(h, blk.TweakData)); err != nil {
		return State{}, fmt.Errorf("put tweak data %d: %w", h, err)
	}
	if err := b.filters.Put(k, dataValue(h, blk.Filter)); err != nil {
		return State{}, fmt.Errorf("put taproot filter %d: %w", h, err)
	}
	if err := b.headers.Put(k, headerValue(&rec)); err != nil {
		return State{}, fmt.Errorf("put commitment header %d: %w", h, err)
	}
	st = State{Start: st.Start, Next: h + 1, Header: blk.Header}
	return st, b.meta.Put(keyState, stateValue(st))
}

// Truncate drops every entry above toHeight inside the store's write
// transaction tx (Rollback and Reorg call it when they disconnect the
// blocks above toHeight). A file without the index is left alone.
func (x *Index) Truncate(tx *bolt.Tx, toHeight uint32) error {
	if toHeight == ^uint32(0) {
		return nil
	}
	return x.trimTo(tx, toHeight+1)
}

// trimTo drops the entries at next and above.
func (x *Index) trimTo(tx *bolt.Tx, next uint32) error {
	b, ok, err := openBuckets(tx)
	if err != nil || !ok {
		return err
	}
	st, err := b.state()
	if err != nil {
		return err
	}
	next = max(st.Start, next)
	if next >= st.Next {
		return nil
	}
	for h := next; h < st.Next; h++ {
		k := heightKey(h)
		for _, bk := range []*bolt.Bucket{b.tweaks, b.filters, b.headers} {
			if err := bk.Delete(k); err != nil {
				return fmt.Errorf("delete silent-payment entry %d: %w", h, err)
			}
		}
	}
	nst := State{Start: st.Start, Next: next}
	if next > st.Start {
		rec, err := b.header(next - 1)
		if err != nil {
			return err
		}
		nst.Header = rec.Header
	}
	if err := b.meta.Put(keyState, stateValue(nst)); err != nil {
		return fmt.Errorf("put silent-payment state: %w", err)
	}
	x.publishOnCommit(tx, nst)
	return nil
}

// Entry is one block a backfill commits.
type Entry struct {
	Height uint32
	Hash   chainhash.Hash
	Block
}

// Commit appends entries, consecutive heights from Next, in one store
// transaction that also moves the frontier, so a killed backfill resumes
// where its last commit ended. Each entry's Hash must be the active
// block's at its height and its header must chain; otherwise it fails
// with ErrStale (the chain or the frontier moved: build again) or
// ErrHeaderMismatch, and writes nothing.
func (x *Index) Commit(entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	err := x.txn(true, func(tx *bolt.Tx, chain Chain) error {
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
		for i := range entries {
			e := &entries[i]
			if e.Height != st.Next {
				return fmt.Errorf("%w: entry at %d, the index is at %d", ErrStale, e.Height, st.Next)
			}
			hash, ok, err := chain.HashAt(e.Height)
			if err != nil {
				return err
			}
			if !ok || hash != e.Hash {
				return fmt.Errorf("%w: block %s is not the active block at %d", ErrStale, e.Hash, e.Height)
			}
			if st, err = b.put(st, e.Hash, &e.Block); err != nil {
				return err
			}
		}
		x.publishOnCommit(tx, st)
		return nil
	})
	if err != nil {
		return fmt.Errorf("commit silent-payment entries %d..%d: %w", entries[0].Height, entries[len(entries)-1].Height, err)
	}
	return nil
}

// ChainHeader is the commitment header of a block whose commitment hash
// is commitment after the header prev, dSHA256(commitment || prev): the
// chain writers must continue.
func ChainHeader(commitment, prev chainhash.Hash) chainhash.Hash {
	var buf [2 * hashLen]byte
	copy(buf[:], commitment[:])
	copy(buf[hashLen:], prev[:])
	return chainhash.DoubleHashH(buf[:])
}
