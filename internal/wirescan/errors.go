package wirescan

import "errors"

// Sentinel errors. Every error a Reader or ReadCompactSize returns wraps
// one of them; callers map them onto their own package's sentinels
// (ErrMalformed, misbehaviour, ErrNonCanonicalN, ...) with errors.Is.
// The texts carry no package prefix because they end up inside the
// callers' messages ("transaction 3: input count: unexpected end of data").
var (
	// ErrTruncated reports bytes that end inside a field.
	ErrTruncated = errors.New("unexpected end of data")

	// ErrNonCanonical reports a CompactSize not in its shortest form, which
	// Bitcoin Core and wire refuse.
	ErrNonCanonical = errors.New("non-canonical CompactSize")

	// ErrCountExceedsData reports a declared count whose items, at their
	// smallest encoding, cannot fit in the bytes that remain.
	ErrCountExceedsData = errors.New("count exceeds the bytes left")

	// ErrWitnessFlag reports a BIP-144 marker followed by a flag other
	// than 0x01.
	ErrWitnessFlag = errors.New("witness marker not followed by flag 0x01")

	// ErrSuperfluousWitness reports a transaction in witness encoding none
	// of whose inputs has a witness (Core: "Superfluous witness record").
	ErrSuperfluousWitness = errors.New("witness flag set but no input has a witness")

	// ErrTrailingData reports bytes left after what had to be the end.
	ErrTrailingData = errors.New("trailing bytes")
)
