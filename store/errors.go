package store

import (
	"errors"

	"github.com/cfindexd/cfindexd/store/storefile"
)

// Sentinel errors. Callers compare with errors.Is; the store wraps them with
// context (heights, hashes, the path) so the message alone says what failed.
var (
	// ErrNotFound is returned when a height is not on the active chain or a
	// hash is neither on the active chain nor in the stale set.
	ErrNotFound = errors.New("not found")

	// ErrNotConnected is returned by CommitBatch when the batch does not
	// extend the tip: heights are not consecutive from tip+1 (or from 0 with
	// the network's genesis hash on an empty store), or a header's PrevBlock
	// is not the hash of the block before it. Nothing is written.
	ErrNotConnected = errors.New("batch does not connect to the tip")

	// ErrInvalidRecord is returned by CommitBatch when a record is malformed
	// on its own: Hash is not Header.BlockHash(), Filter is empty or
	// longer than MaxFilterSize, or a
	// non-zero FilterHash is not dSHA256(Filter). Nothing is written.
	ErrInvalidRecord = errors.New("invalid block record")

	// ErrFilterHeaderMismatch is returned by CommitBatch when a record's
	// FilterHeader is not dSHA256(dSHA256(Filter) || previous filter
	// header), the previous one being the tip's for the first record (the
	// zero hash for genesis). The caller's filter-header chain is broken;
	// nothing is written.
	ErrFilterHeaderMismatch = errors.New("filter header does not continue the chain")

	// ErrBadRange is returned for a range whose start lies above its end (or
	// above the stop block's height), and by Rollback for a target above
	// the tip.
	ErrBadRange = errors.New("bad range")

	// ErrRangeTooLarge is returned for a range of more than MaxRange
	// heights.
	ErrRangeTooLarge = errors.New("range too large")

	// ErrWrongNetwork is returned by Open when the file was created for a
	// different genesis block.
	ErrWrongNetwork = errors.New("store belongs to another network")

	// ErrSchemaVersion is returned by Open when the file was written with a
	// schema version this code does not read.
	ErrSchemaVersion = errors.New("unsupported store schema version")

	// ErrLocked is returned by Open when another process (or another Store
	// in this process) holds the file and did not release it within
	// Options.Timeout.
	ErrLocked = storefile.ErrLocked

	// ErrCorrupt is returned when the file is not a bbolt database, or is
	// one but not a readable store (missing buckets, malformed values, a
	// stale block whose parent is missing).
	ErrCorrupt = errors.New("store is corrupt")

	// ErrChecksumMismatch is returned (inside a *MismatchError naming the
	// height) by a read that meets a stored filter, filter hash, filter
	// header or cfilter checksum that fails its CRC32C. Nothing of it is
	// returned; Repair rewrites it (checked.go).
	ErrChecksumMismatch = errors.New("stored value fails its checksum")

	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("store is closed")
)
