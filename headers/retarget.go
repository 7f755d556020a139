package headers

import (
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// The difficulty rules a header chain follows: which compact target (bits)
// each header must carry, and that its hash meets it. The rules are the
// consensus ones as btcd's blockchain package applies them
// (calcNextRequiredDifficulty): a retarget every BlocksPerRetarget blocks
// from the timespan of the period, clamped by the adjustment factor and the
// proof-of-work limit; the testnets' minimum-difficulty blocks after
// MinDiffReductionTime without a block; testnet4's BIP-94 base (the
// period's first block); no retargeting at all on regtest and simnet.

// ErrBadProofOfWork reports a header whose hash does not meet its target,
// or whose target is not a valid one of the network.
var ErrBadProofOfWork = errors.New("proof of work does not meet the target")

// ErrBadDifficulty reports a header whose bits are not those the network's
// difficulty rules require at its height.
var ErrBadDifficulty = errors.New("difficulty bits do not follow the network's rules")

// DifficultyRules are a network's difficulty parameters, as btcd's
// chaincfg.Params carries them (see DifficultyRulesOf in callers that hold
// the params).
type DifficultyRules struct {
	PowLimit                 *big.Int
	PowLimitBits             uint32
	TargetTimespan           time.Duration
	TargetTimePerBlock       time.Duration
	RetargetAdjustmentFactor int64
	ReduceMinDifficulty      bool
	MinDiffReductionTime     time.Duration
	NoRetargeting            bool
	EnforceBIP94             bool
}

// BlocksPerRetarget is how many blocks each difficulty period holds.
func (r *DifficultyRules) BlocksPerRetarget() uint32 {
	if r.TargetTimePerBlock <= 0 {
		return 1
	}
	return uint32(r.TargetTimespan / r.TargetTimePerBlock)
}

// DifficultyHeader is what the rules read of an earlier header.
type DifficultyHeader struct {
	Bits      uint32
	Timestamp int64 // seconds since the epoch
}

// NextBits returns the bits the header at height must carry, given its
// timestamp (newTime, seconds) and at, which returns the header of the
// chain at a lower height. Height 0 (genesis) carries PowLimitBits by
// definition of this function's callers; the genesis block is checked by
// hash, not by these rules.
func NextBits(r *DifficultyRules, height uint32, newTime int64, at func(height uint32) (DifficultyHeader, error)) (uint32, error) {
	if r.NoRetargeting || height == 0 {
		return r.PowLimitBits, nil
	}
	per := r.BlocksPerRetarget()
	last, err := at(height - 1)
	if err != nil {
		return 0, err
	}
	if height%per != 0 {
		if !r.ReduceMinDifficulty {
			return last.Bits, nil
		}
		if newTime > last.Timestamp+int64(r.MinDiffReductionTime/time.Second) {
			return r.PowLimitBits, nil
		}
		return prevNonMinBits(r, height-1, last, per, at)
	}
	first, err := at(height - per)
	if err != nil {
		return 0, err
	}
	factor := r.RetargetAdjustmentFactor
	target := int64(r.TargetTimespan / time.Second)
	span := min(max(last.Timestamp-first.Timestamp, target/factor), target*factor)
	old := last.Bits
	if r.EnforceBIP94 {
		old = first.Bits
	}
	next := CompactToBig(old)
	next.Mul(next, big.NewInt(span))
	next.Div(next, big.NewInt(target))
	if next.Cmp(r.PowLimit) > 0 {
		next.Set(r.PowLimit)
	}
	return BigToCompact(next), nil
}

// prevNonMinBits walks back from the header at height h (hdr) to the last
// one that is not a minimum-difficulty block or starts a period, and
// returns its bits (btcd's findPrevTestNetDifficulty).
func prevNonMinBits(r *DifficultyRules, h uint32, hdr DifficultyHeader, per uint32, at func(uint32) (DifficultyHeader, error)) (uint32, error) {
	for h%per != 0 && hdr.Bits == r.PowLimitBits {
		h--
		var err error
		if hdr, err = at(h); err != nil {
			return 0, err
		}
	}
	return hdr.Bits, nil
}

// CheckProofOfWork checks that bits is a valid target of the network
// (positive, at most powLimit) and that hash meets it.
func CheckProofOfWork(hash *chainhash.Hash, bits uint32, powLimit *big.Int) error {
	target := CompactToBig(bits)
	if target.Sign() <= 0 {
		return fmt.Errorf("%w: bits %08x is not a positive target", ErrBadProofOfWork, bits)
	}
	if target.Cmp(powLimit) > 0 {
		return fmt.Errorf("%w: bits %08x is above the proof-of-work limit", ErrBadProofOfWork, bits)
	}
	if HashToBig(hash).Cmp(target) > 0 {
		return fmt.Errorf("%w: hash %s is above target %08x", ErrBadProofOfWork, hash, bits)
	}
	return nil
}

// BigToCompact encodes a non-negative target as compact bits, the inverse
// of CompactToBig up to its 23 bits of precision.
func BigToCompact(n *big.Int) uint32 {
	if n.Sign() == 0 {
		return 0
	}
	b := n.Bytes()
	exponent := uint32(len(b))
	var mantissa uint32
	if exponent <= 3 {
		for _, x := range b {
			mantissa = mantissa<<8 | uint32(x)
		}
		mantissa <<= 8 * (3 - exponent)
	} else {
		mantissa = uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2])
	}
	if mantissa&0x00800000 != 0 {
		mantissa >>= 8
		exponent++
	}
	bits := exponent<<24 | mantissa
	if n.Sign() < 0 {
		bits |= 0x00800000
	}
	return bits
}
