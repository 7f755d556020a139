package spindex

import (
	"errors"
	"fmt"
)

// Sentinel errors; callers compare with errors.Is.
var (
	// ErrNotEnabled is returned by Commit and the reads when Enable has
	// never run on the file.
	ErrNotEnabled = errors.New("silent-payment index not enabled")

	// ErrNotFound is returned for a height the index does not cover
	// (below Start, at or above Next) or a hash not on the active chain.
	ErrNotFound = errors.New("not in the silent-payment index")

	// ErrStartHeight is returned by Enable when the file's index starts at
	// another height.
	ErrStartHeight = errors.New("silent-payment index starts at another height")

	// ErrStale is returned by Commit when its entries no longer continue
	// the index on the active chain (the frontier or the chain moved since
	// they were built). Nothing is written; the caller builds again.
	ErrStale = errors.New("silent-payment entries do not continue the index")

	// ErrHeaderMismatch is returned when an entry's commitment header does
	// not chain onto the previous one. Nothing is written.
	ErrHeaderMismatch = errors.New("silent-payment commitment header does not continue the chain")

	// ErrInvalidEntry is returned for tweak data or a filter that is empty
	// or larger than MaxValueSize. Nothing is written.
	ErrInvalidEntry = errors.New("invalid silent-payment entry")

	// ErrBadRange is returned for a range whose start lies above its end.
	ErrBadRange = errors.New("bad range")

	// ErrRangeTooLarge is returned for a range of more than MaxRange
	// heights.
	ErrRangeTooLarge = errors.New("range too large")

	// ErrCorrupt is returned for a value of the wrong shape or an entry
	// missing inside the indexed range.
	ErrCorrupt = errors.New("silent-payment index is corrupt")

	// ErrChecksumMismatch is returned, inside a *MismatchError, by a read
	// that meets a value failing its CRC32C.
	ErrChecksumMismatch = errors.New("stored silent-payment value fails its checksum")
)

// MismatchError is a stored value that fails its CRC32C: it is not
// returned. Rebuilding it means truncating the index below Height
// (Truncate) and letting the backfill commit the blocks again.
type MismatchError struct {
	Height uint32
	// What names the value: "tweak data", "taproot filter", "commitment
	// header" or "state".
	What string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("silent-payment %s at height %d fails its checksum", e.What, e.Height)
}

// Unwrap makes a MismatchError ErrChecksumMismatch.
func (e *MismatchError) Unwrap() error { return ErrChecksumMismatch }
