package store

import (
	"errors"
	"fmt"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/cfindexd/cfindexd/store/spindex"
)

// reindexHint ends every corruption error the store returns, so the line an
// operator reads says what to do.
const reindexHint = "run `cfindexd --reindex` or delete it"

// corruptError is an error wrapping ErrCorrupt that names the file and ends
// with reindexHint. It unwraps to the error it annotates.
type corruptError struct {
	path string
	err  error
}

func (e *corruptError) Error() string {
	return fmt.Sprintf("%v (%s); %s", e.err, e.path, reindexHint)
}

func (e *corruptError) Unwrap() error { return e.err }

// withHint annotates an error wrapping ErrCorrupt with the file and the
// hint, once; other errors pass unchanged.
func withHint(path string, err error) error {
	if err == nil || !errors.Is(err, ErrCorrupt) {
		return err
	}
	var ce *corruptError
	if errors.As(err, &ce) {
		return err
	}
	return &corruptError{path: path, err: err}
}

// panicError turns a recovered panic value into an error wrapping
// ErrCorrupt. bbolt panics on pages whose header, element offsets or child
// ids are wrong ("assertion failed: page 12: has unexpected type/flags"),
// and with SetPanicOnFault a read of a page beyond the end of a truncated
// file (SIGBUS) or outside the mapping (SIGSEGV) arrives here as a runtime
// error instead of killing the process.
func panicError(where string, v any) error {
	if fault, ok := v.(interface{ Addr() uintptr }); ok {
		return fmt.Errorf("%w: %s: memory fault at %#x in the mapped file (truncated, or a page id outside it)", ErrCorrupt, where, fault.Addr())
	}
	return fmt.Errorf("%w: %s: bbolt panicked: %v", ErrCorrupt, where, v)
}

// txn runs fn in a bbolt transaction (read-write if write) with panics and
// memory faults turned into errors wrapping ErrCorrupt.
//
// Two places are told apart. A panic inside fn (walking a bad page with a
// cursor, a Get that lands on a bad leaf) is recovered inside the
// transaction, so bbolt's own View/Update see an ordinary error and roll
// back normally: its locks are released and the store stays usable for
// every read that does not touch the bad page. A panic outside fn (while
// beginning, committing or rolling back) may leave bbolt's internal locks
// held, so the store is marked broken: every later call fails at once with
// the same error, and Close releases the file without waiting on bbolt.
func (s *Store) txn(write bool, fn func(tx *bolt.Tx) error) (err error) {
	if err := s.brokenErr(); err != nil {
		return err
	}
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if v := recover(); v != nil {
			err = s.markBroken(panicError("bbolt transaction", v))
		}
	}()
	inner := func(tx *bolt.Tx) (ferr error) {
		defer func() {
			if v := recover(); v != nil {
				ferr = panicError("reading a page", v)
			}
		}()
		return fn(tx)
	}
	if write {
		err = s.db.Update(inner)
	} else {
		err = s.db.View(inner)
	}
	if m, ok := AsMismatch(err); ok {
		if s.onMismatch != nil {
			s.onMismatch(m)
		}
		return err
	}
	return withHint(s.path, mapClosed(err))
}

// markBroken records err as the store's permanent state and returns it
// with the hint.
func (s *Store) markBroken(err error) error {
	err = withHint(s.path, err)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken == nil {
		s.broken = err
	}
	return s.broken
}

// brokenErr returns the error that broke the store, or nil.
func (s *Store) brokenErr() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.broken
}

// view runs fn in a read transaction.
func (s *Store) view(fn func(b *buckets) error) error {
	return s.txn(false, func(tx *bolt.Tx) error {
		b, err := openBuckets(tx)
		if err != nil {
			return err
		}
		return fn(b)
	})
}

// update runs fn in a write transaction that commits (with fsync unless
// Options.NoSync) if fn returns nil and rolls back otherwise.
func (s *Store) update(fn func(b *buckets) error) error {
	return s.txn(true, func(tx *bolt.Tx) error {
		b, err := openBuckets(tx)
		if err != nil {
			return err
		}
		b.setAppendFill()
		return fn(b)
	})
}

// SilentPayments returns the silent-payment index (store/spindex) that
// CommitBatch, Reorg and Rollback keep in their transactions.
func (s *Store) SilentPayments() *spindex.Index { return s.sp }

// spTxn runs a transaction of spindex with the store's guards, a write
// under the writer lock.
func (s *Store) spTxn(write bool, fn func(*bolt.Tx, spindex.Chain) error) error {
	run := func(b *buckets) error { return fn(b.meta.Tx(), spChain{b}) }
	if !write {
		return s.view(run)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.update(run)
}

func mapClosed(err error) error {
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}
