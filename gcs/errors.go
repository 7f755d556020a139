package gcs

import "errors"

// Sentinel errors. Every error returned by this package wraps exactly the
// sentinels that describe it, so callers branch with errors.Is.
var (
	// ErrBadP reports a Golomb-Rice parameter outside 1..32.
	ErrBadP = errors.New("gcs: P out of range 1..32")

	// ErrBadM reports an inverse false-positive rate outside 1..2^32-1.
	ErrBadM = errors.New("gcs: M out of range 1..2^32-1")

	// ErrNTooLarge reports an element count N ≥ 2^32 (from a CompactSize
	// prefix or from too many distinct items handed to Build).
	ErrNTooLarge = errors.New("gcs: N does not fit in 32 bits")

	// ErrNExceedsData reports an N that the stream cannot possibly hold:
	// every element costs at least P+1 bits. Errors carrying it also wrap
	// ErrTruncated, since the stream is too short for the N it claims.
	ErrNExceedsData = errors.New("gcs: N exceeds what the stream can encode")

	// ErrTruncated reports a stream (or CompactSize prefix) that ends
	// before the last of its N elements is complete.
	ErrTruncated = errors.New("gcs: truncated stream")

	// ErrTrailingData reports whole bytes left after the byte that holds
	// the last bit of the N-th element.
	ErrTrailingData = errors.New("gcs: trailing data after the last element")

	// ErrNonZeroPadding reports padding bits (after the last element, in
	// its final byte) that are not zero; no conforming encoder writes them.
	ErrNonZeroPadding = errors.New("gcs: non-zero padding bits")

	// ErrValueOutOfRange reports a decoded value ≥ N·M, which no encoder
	// can produce (every hash is reduced into [0, N·M)).
	ErrValueOutOfRange = errors.New("gcs: decoded value outside [0, N*M)")

	// ErrNonCanonicalN reports a CompactSize N prefix that is not in its
	// shortest form (Bitcoin Core and btcd reject those too).
	ErrNonCanonicalN = errors.New("gcs: non-canonical CompactSize N")

	// ErrNilHasher reports a nil Hasher passed to Build, Match or MatchAny.
	ErrNilHasher = errors.New("gcs: nil hasher")
)
