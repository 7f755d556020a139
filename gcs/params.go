package gcs

import "fmt"

// Params are the two parameters of a Golomb-coded set: P, the number of
// Golomb-Rice remainder bits, and M, the inverse false-positive rate (hashes
// are reduced into [0, N·M)). BIP-158 basic filters and Cashu filters both
// use P=19, M=784931.
type Params struct {
	P uint8
	M uint64
}

// MaxP is the largest Golomb-Rice parameter accepted.
const MaxP = 32

// MaxM is the largest inverse false-positive rate accepted; together with
// N < 2^32 it keeps N·M below 2^64.
const MaxM = 1<<32 - 1

// BasicParams are the parameters of a BIP-158 basic filter.
var BasicParams = Params{P: BasicP, M: BasicM}

// Validate reports whether p is usable: 1 ≤ P ≤ 32 and 1 ≤ M < 2^32.
// It returns an error wrapping ErrBadP or ErrBadM.
func (p Params) Validate() error {
	if p.P < 1 || p.P > MaxP {
		return fmt.Errorf("parameter P=%d: %w", p.P, ErrBadP)
	}
	if p.M < 1 || p.M > MaxM {
		return fmt.Errorf("parameter M=%d: %w", p.M, ErrBadM)
	}
	return nil
}
