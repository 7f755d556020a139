package headers

import (
	"crypto/sha256"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// FilterHash returns the BIP-157 filter hash: double SHA-256 of the filter in
// its wire form (CompactSize N prefix followed by the Golomb-coded stream).
// It is the value a cfheaders message carries for each block.
func FilterHash(filterWithN []byte) chainhash.Hash {
	return chainhash.DoubleHashH(filterWithN)
}

// FilterHeaderFromHash chains one filter hash onto the previous filter
// header: double SHA-256 of filterHash || prev. It does not allocate.
func FilterHeaderFromHash(filterHash, prev chainhash.Hash) chainhash.Hash {
	var buf [2 * chainhash.HashSize]byte
	copy(buf[:chainhash.HashSize], filterHash[:])
	copy(buf[chainhash.HashSize:], prev[:])
	first := sha256.Sum256(buf[:])
	return chainhash.Hash(sha256.Sum256(first[:]))
}

// FilterHeader returns the BIP-157 filter header of a block: double SHA-256
// of (double SHA-256 of filterWithN) || prev, where prev is the previous
// block's filter header, or the zero hash for the genesis block.
// filterWithN is the filter in wire form, N prefix included.
// It does not allocate.
func FilterHeader(filterWithN []byte, prev chainhash.Hash) chainhash.Hash {
	return FilterHeaderFromHash(FilterHash(filterWithN), prev)
}

// ChainHeaders returns the filter headers of consecutive blocks whose filters
// (wire form) are given in height order, starting from prev, the filter header
// of the block before filters[0] (the zero hash if filters[0] is genesis).
func ChainHeaders(prev chainhash.Hash, filters [][]byte) []chainhash.Hash {
	out := make([]chainhash.Hash, len(filters))
	for i, f := range filters {
		prev = FilterHeader(f, prev)
		out[i] = prev
	}
	return out
}

// VerifyChain checks that want[i] is the filter header of filters[i] for
// every i, chaining from prev as ChainHeaders does. It returns an error
// wrapping ErrCountMismatch if the slices differ in length, or one wrapping
// ErrHeaderMismatch that names the first index that does not match.
func VerifyChain(prev chainhash.Hash, filters [][]byte, want []chainhash.Hash) error {
	if len(filters) != len(want) {
		return fmt.Errorf("verify filter headers: %d filters, %d headers: %w",
			len(filters), len(want), ErrCountMismatch)
	}
	for i, f := range filters {
		prev = FilterHeader(f, prev)
		if prev != want[i] {
			return fmt.Errorf("verify filter headers: index %d: computed %s, want %s: %w",
				i, prev, want[i], ErrHeaderMismatch)
		}
	}
	return nil
}
