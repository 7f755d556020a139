package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/cfindexd/cfindexd/store/boltfile"
	"github.com/cfindexd/cfindexd/store/spindex"
	"github.com/cfindexd/cfindexd/store/storefile"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// MaxRange is the largest number of heights one range read returns. It is
// the ceiling of the P2P protocol's limits (2,000 filter headers per
// getcfheaders, 1,000 filters per getcfilters, 2,000 headers per
// getheaders); callers enforce the tighter protocol limit themselves, the
// store only refuses to build an unbounded answer.
const MaxRange = 2000

// DefaultLockTimeout is the file-lock wait Open uses when Options.Timeout is
// zero, so that a second process never waits forever.
const DefaultLockTimeout = storefile.DefaultLockTimeout

// Options configure Open.
type Options struct {
	// Timeout bounds the wait for the exclusive file lock held by another
	// open Store of the same file; Open then fails with ErrLocked. Zero or
	// negative means DefaultLockTimeout: Open never waits forever.
	Timeout time.Duration

	// NoSync skips fdatasync at commit. A process crash still leaves a
	// consistent store, but a power loss or kernel crash may lose or tear
	// the last commits. For tests only; never set it in production.
	NoSync bool

	// OnMismatch, if set, is called with each *MismatchError a read or
	// write meets (a stored value failing its CRC32C), from the goroutine
	// of that call, after its transaction has ended. It must not block; it
	// is called once per failing call, however many calls meet the same
	// value.
	OnMismatch func(*MismatchError)

	// createHook, if set, is called after each step of creating a new
	// store (the step* constants); an error aborts the creation there.
	// Tests use it to interrupt creation.
	createHook func(step string) error

	// holdBackfill keeps Open from starting the checksum backfill of a
	// store upgraded from schema 1; backfillBatchHeights (if positive)
	// lowers its batch size and backfillHook is called after each batch.
	// For tests.
	holdBackfill         bool
	backfillBatchHeights int
	backfillHook         func(phase string, next uint32)
}

// Tip is the highest block of the active chain.
type Tip struct {
	Height       uint32
	Hash         chainhash.Hash
	FilterHeader chainhash.Hash
}

// BlockRecord is one block as the store keeps it.
type BlockRecord struct {
	Height       uint32
	Hash         chainhash.Hash
	Header       wire.BlockHeader
	Filter       []byte // BIP-158 wire form: CompactSize N, then the Golomb-coded set
	FilterHeader chainhash.Hash
	// FilterHash is dSHA256(Filter), the BIP-157 filter hash a cfheaders
	// message carries. Reads fill it in. CommitBatch computes it from
	// Filter: a caller may leave it zero, and a non-zero value that
	// differs is refused with ErrInvalidRecord.
	FilterHash chainhash.Hash
	// SilentPay: the block's entry of the silent-payment index, if any.
	SilentPay *spindex.Block
}

// Store is a filter store in one bbolt file. All methods are safe for
// concurrent use; CommitBatch and Rollback are serialised, readers run in
// parallel with them and with each other and see only committed state.
type Store struct {
	db      *bolt.DB
	file    *os.File // bbolt's file, kept to release the lock if bbolt cannot
	path    string
	genesis chainhash.Hash
	sp      *spindex.Index

	onMismatch func(*MismatchError)

	// writeMu serialises CommitBatch and Rollback so that the cached tip
	// is updated in commit order.
	writeMu sync.Mutex

	mu         sync.RWMutex // guards the fields below
	tip        Tip
	hasTip     bool
	tipChanged chan struct{}
	closed     bool
	broken     error // set when a panic outside a transaction's body left bbolt unusable

	// The checksum backfill of a store upgraded from schema 1
	// (upgrade.go): backfillStop ends it and backfillDone is closed when it
	// has; nil when none runs. backfillErr (guarded by mu) is what stopped
	// it early.
	backfillStop context.CancelFunc
	backfillDone chan struct{}
	backfillErr  error
}

// Open opens the store at path, creating it for the network whose genesis
// block hash is genesis if the file does not exist. It fails with
// ErrWrongNetwork if the file belongs to another genesis, ErrSchemaVersion
// if it was written with a schema version this build neither reads nor
// upgrades (a schema-1 file is upgraded in place: see upgrade.go), ErrLocked if another Store
// holds the file past opts.Timeout, and ErrCorrupt if it is not a bbolt
// file, a damaged one (truncated, zero-filled, a bad meta, freelist or root
// page: see boltfile.Check), or a bbolt file that is not a store. A failed Open
// of an existing file writes nothing to it.
//
// A new store is built in a temporary file and linked into place (see
// create), so a crash or a full disk during creation never leaves a
// half-made store at path. An existing file is locked and checked with
// plain reads before bbolt maps it, so damage that would make bbolt fault
// (SIGBUS) or panic is a clear error instead.
func Open(path string, genesis chainhash.Hash, opts Options) (*Store, error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	storefile.RemoveStaleCreating(storefile.SplitPath(path))
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if err := create(path, genesis, opts); err != nil {
			return nil, fmt.Errorf("open store %s: %w", path, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := storefile.Lock(f, timeout); err != nil {
		f.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	size, err := fileSize(f)
	if err == nil {
		err = checkFile(f, size)
	}
	if err != nil {
		f.Close()
		return nil, withHint(path, err)
	}
	db, err := openBolt(f, timeout, opts)
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open store %s: waited %s: %w", path, timeout, ErrLocked)
	}
	if errors.Is(err, bolterrors.ErrInvalid) || errors.Is(err, bolterrors.ErrVersionMismatch) || errors.Is(err, bolterrors.ErrChecksum) {
		err = fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			return nil, withHint(path, err)
		}
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s := &Store{db: db, file: f, path: path, genesis: genesis, tipChanged: make(chan struct{}), onMismatch: opts.OnMismatch}
	if err = s.init(); err == nil {
		s.sp, err = spindex.Open(s.spTxn)
	}
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := s.startBackfill(opts); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return s, nil
}

// checkFile checks the bbolt file r, size bytes long, before bbolt maps it
// (boltfile.Check). A damaged file is ErrCorrupt with boltfile's detail,
// worded like every other corruption error of the store.
func checkFile(r io.ReaderAt, size int64) error {
	err := boltfile.Check(r, size)
	var ce *boltfile.CorruptError
	switch {
	case !errors.As(err, &ce):
		return err
	case ce.Err != nil:
		return fmt.Errorf("%w: %s: %w", ErrCorrupt, ce.Detail, ce.Err)
	default:
		return fmt.Errorf("%w: %s", ErrCorrupt, ce.Detail)
	}
}

// fileSize returns f's size.
func fileSize(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// openBolt opens the locked, checked file f with bbolt. A panic or memory
// fault inside bbolt (a freelist it cannot read) becomes an error wrapping
// ErrCorrupt; f is then closed, which releases the lock.
func openBolt(f *os.File, timeout time.Duration, opts Options) (db *bolt.DB, err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if v := recover(); v != nil {
			f.Close()
			db, err = nil, panicError("opening the file", v)
		}
	}()
	return bolt.Open(f.Name(), 0o600, &bolt.Options{
		Timeout:      timeout,
		NoSync:       opts.NoSync,
		FreelistType: bolt.FreelistMapType,
		OpenFile:     func(string, int, os.FileMode) (*os.File, error) { return f, nil },
	})
}

// init checks the schema version and genesis of the file and loads the tip.
// A bbolt file without any bucket (a store created in place by an older
// build that stopped before writing its schema) gets the schema now.
func (s *Store) init() error {
	var fresh bool
	err := s.txn(false, func(tx *bolt.Tx) error {
		if tx.Bucket(bucketMeta) != nil {
			return nil
		}
		fresh = true
		return tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			return fmt.Errorf("%w: bbolt file has bucket %q but no %q: not a filter store", ErrCorrupt, name, bucketMeta)
		})
	})
	if err != nil {
		return err
	}
	if fresh {
		err := s.txn(true, func(tx *bolt.Tx) error { return writeSchema(tx, s.genesis) })
		if err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
	}
	var version uint32
	err = s.txn(false, func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		v := meta.Get(metaSchemaVersion)
		if v == nil {
			return fmt.Errorf("%w: no schema version", ErrCorrupt)
		}
		var err error
		if version, err = decodeHeight(v); err != nil {
			return fmt.Errorf("schema version: %w", err)
		}
		if version < schemaV1 || version > SchemaVersion {
			return fmt.Errorf("%w: file has version %d, this build reads %d (and upgrades %d..%d)", ErrSchemaVersion, version, SchemaVersion, schemaV1, schemaV3)
		}
		stored, err := decodeHash(meta.Get(metaGenesis))
		if err != nil {
			return fmt.Errorf("genesis: %w", err)
		}
		if stored != s.genesis {
			return fmt.Errorf("%w: file has genesis %s, want %s", ErrWrongNetwork, stored, s.genesis)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if version != SchemaVersion {
		err := s.txn(true, func(tx *bolt.Tx) error {
			if version == schemaV1 {
				if err := upgradeFromV1(tx); err != nil {
					return err
				}
			}
			if version <= schemaV2 {
				if err := upgradeFromV2(tx); err != nil {
					return err
				}
			}
			return upgradeFromV3(tx)
		})
		if err != nil {
			return fmt.Errorf("upgrade from schema %d: %w", version, err)
		}
	}
	return s.txn(false, func(tx *bolt.Tx) error {
		b, err := openBuckets(tx)
		if err != nil {
			return err
		}
		tip, ok, err := b.readTip()
		if err != nil {
			return err
		}
		s.tip, s.hasTip = tip, ok
		return nil
	})
}

// Close releases the file and its lock. It waits for running reads and
// writes to finish. Every later call fails with ErrClosed, and channels from
// TipChanged are closed so that waiters wake up. Close is idempotent.
func (s *Store) Close() error {
	s.stopBackfill()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.tipChanged)
	broken := s.broken
	s.mu.Unlock()
	if broken != nil {
		// bbolt may hold its own locks after the panic that broke the
		// store; closing the file releases the flock without waiting on
		// them (the mapping goes with the process).
		_ = s.file.Close()
		return nil
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close store %s: %w", s.path, err)
	}
	return nil
}

// Tip returns the highest block of the active chain, or false on an empty
// store. It reads a copy cached in memory and does not touch the file.
func (s *Store) Tip() (Tip, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.tip, s.hasTip
}

// TipChanged returns a channel that is closed after the next successful
// CommitBatch or Rollback (or Close). To wait for a tip without missing an
// update, call TipChanged first, then check Tip, then wait on the channel.
func (s *Store) TipChanged() <-chan struct{} {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.tipChanged
}

// setTip publishes a committed tip and wakes the waiters.
func (s *Store) setTip(t Tip, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tip, s.hasTip = t, ok
	close(s.tipChanged)
	s.tipChanged = make(chan struct{})
}

// SizeBytes returns the size of the store file in bytes, or 0 if it cannot
// be stat'ed. bbolt grows the file in steps and never shrinks it, so this is
// the disk footprint rather than the live data.
func (s *Store) SizeBytes() int64 {
	fi, err := os.Stat(s.path)
	if err != nil {
		return 0
	}
	return fi.Size()
}
