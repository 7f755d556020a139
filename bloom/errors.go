package bloom

import "errors"

// Sentinel errors; they come back wrapped with context, test with errors.Is.
var (
	// ErrBadParams: a false-positive rate outside (0, 1) or an element
	// count below 1 was asked for.
	ErrBadParams = errors.New("bloom: bad filter parameters")
	// ErrFilterTooLarge: a filterload of more than MaxFilterSize bytes
	// (Core: IsWithinSizeConstraints fails; the peer is misbehaving).
	ErrFilterTooLarge = errors.New("bloom: filter larger than 36,000 bytes")
	// ErrTooManyHashFuncs: a filterload asking for more than MaxHashFuncs
	// hash functions (Core: IsWithinSizeConstraints fails).
	ErrTooManyHashFuncs = errors.New("bloom: more than 50 hash functions")
	// ErrElementTooLarge: a filteradd element longer than
	// MaxFilterAddSize bytes (Core: "bad filteradd message").
	ErrElementTooLarge = errors.New("bloom: filteradd element larger than 520 bytes")
	// ErrMalformedMerkleBlock: merkleblock bytes that do not decode, or
	// whose counts exceed what the message carries.
	ErrMalformedMerkleBlock = errors.New("bloom: malformed merkleblock")
	// ErrBadPartialTree: a partial merkle tree that Core's ExtractMatches
	// refuses (no transactions, too many, more hashes than transactions,
	// fewer bits than hashes, bits or hashes left over or run out, two
	// identical sibling subtrees).
	ErrBadPartialTree = errors.New("bloom: invalid partial merkle tree")
	// ErrMerkleRootMismatch: a well-formed partial merkle tree whose root
	// is not the block header's merkle root.
	ErrMerkleRootMismatch = errors.New("bloom: partial merkle tree root differs from the header's")
)
