package bip37

import (
	"fmt"
	"math"
)

// Defaults of Config fields left zero.
const (
	// DefaultMaxFPR is the light-client spec's ceiling: a filter
	// whose estimated false-positive rate is above 10 % matches nearly
	// everything and costs the server a full node's relay for nothing.
	DefaultMaxFPR = 0.1
	// DefaultUpdateAllowance is the filter updates (filterload or
	// filteradd) a peer may send before the spec's rate applies. bitcoinj
	// sends one filterload (and a mempool) when it connects and reloads
	// its filter when its key lookahead is refilled (every few dozen new
	// addresses) or a filtered block exhausts it during a sync; it never
	// sends filteradd. A wallet that adds its addresses one filteradd at
	// a time needs one per address. 100 covers either at start-up, and a
	// wallet that reloads ten times an hour for a day still keeps most of
	// it (see DefaultUpdateBlocks).
	DefaultUpdateAllowance = 100
	// DefaultUpdateBlocks is the spec's rate: after the allowance, a
	// peer earns one more filter update per 10 blocks. Blocks are counted
	// as the larger of the blocks the chain grew while the peer was
	// connected and the filtered blocks the peer was served, so a wallet
	// at the tip earns one per 10 new blocks and a wallet rescanning
	// history one per 10 blocks it scans (a rescan reloads its filter as
	// it finds transactions).
	DefaultUpdateBlocks = 10
	// DefaultCPUShare is the fraction of the machine's CPU time
	// (GOMAXPROCS cores) that BIP-37 work may take on average: decoding
	// blocks, hashing their txids, matching filters against blocks and
	// the mempool, and a charge per frame sent for the writing. The rest
	// stays with BIP-157 peers and the indexer, whose throughput a fleet
	// of BIP-37 wallets must not take.
	DefaultCPUShare = 0.15
	// DefaultFilteredBlockCacheBytes bounds the decoded blocks (with
	// their txids) kept for filtered-block requests: many wallets asking
	// for the same new block decode and hash it once, and the newest
	// blocks a wallet catching up on a few hours asks for stay decoded
	// beside the blocks other peers have pinned.
	DefaultFilteredBlockCacheBytes = 64 << 20
)

// Config configures BIP-37 serving. Zero values take the defaults above;
// nothing is served unless Enabled.
type Config struct {
	// Enabled offers NODE_BLOOM and serves filterload, filteradd,
	// filterclear, filtered blocks, mempool and getblocks (Core's
	// -peerbloomfilters). Off, those messages get Core's reaction to a
	// node without NODE_BLOOM: the connection is closed without penalty.
	Enabled bool
	// MaxFPR refuses a filter whose estimated false-positive rate (fill^k,
	// bloom.Filter.EstimatedFPR: a server cannot see how many elements it
	// holds) is above it, after a filterload or filteradd; the peer is
	// disconnected without penalty. 1 accepts every filter, including
	// the zero-byte and k = 0 filters that match everything.
	MaxFPR float64
	// MinFPR refuses a filter whose estimated rate is below it (the spec's
	// privacy floor is 0.01); 0 accepts every filter.
	MinFPR float64
	// UpdateAllowance and UpdateBlocks limit filter updates: a peer may
	// send UpdateAllowance filterload and filteradd messages at once, and
	// earns one more per UpdateBlocks blocks (see
	// DefaultUpdateBlocks), up to UpdateAllowance again. One more is
	// an invalid request (disconnect without penalty).
	UpdateAllowance int
	UpdateBlocks    int
	// CPUShare bounds BIP-37 work across all peers: at most this fraction
	// of GOMAXPROCS cores on average (a token bucket of CPU time), in
	// max(1, ⌈CPUShare·GOMAXPROCS⌉) slots granted to the peer with the
	// least recent work, a block matched a bounded piece per grant.
	CPUShare float64
	// FilteredBlockCacheBytes bounds the decoded blocks kept to answer
	// filtered-block requests.
	FilteredBlockCacheBytes int64
	// Mempool is the node's mempool (mempool.Mirror): mempool
	// requests are answered from it and new transactions announced from
	// it. Nil: mempool answers nothing and nothing is announced.
	Mempool Mempool
}

// WithDefaults returns b with every zero field set to its default.
func (b Config) WithDefaults() Config {
	if b.MaxFPR == 0 {
		b.MaxFPR = DefaultMaxFPR
	}
	if b.UpdateAllowance == 0 {
		b.UpdateAllowance = DefaultUpdateAllowance
	}
	if b.UpdateBlocks == 0 {
		b.UpdateBlocks = DefaultUpdateBlocks
	}
	if b.CPUShare == 0 {
		b.CPUShare = DefaultCPUShare
	}
	if b.FilteredBlockCacheBytes == 0 {
		b.FilteredBlockCacheBytes = DefaultFilteredBlockCacheBytes
	}
	return b
}

// Validate reports the first invalid setting of a Config with defaults
// applied.
func (b Config) Validate() error {
	if err := CheckFPR(b.MinFPR, b.MaxFPR); err != nil {
		return err
	}
	switch {
	case b.UpdateAllowance < 1 || b.UpdateBlocks < 1:
		return fmt.Errorf("UpdateAllowance %d and UpdateBlocks %d must be positive", b.UpdateAllowance, b.UpdateBlocks)
	case CheckCPUShare(b.CPUShare) != nil:
		return CheckCPUShare(b.CPUShare)
	case b.FilteredBlockCacheBytes < 1:
		return fmt.Errorf("FilteredBlockCacheBytes %d must be positive", b.FilteredBlockCacheBytes)
	}
	return nil
}

// FPRError is CheckFPR's error: Field (MaxFPR or MinFPR) is
// invalid for Reason.
type FPRError struct {
	Field  string
	Reason string
}

func (e *FPRError) Error() string { return e.Field + " " + e.Reason }

// CheckFPR reports whether minFPR and maxFPR are valid Config.MinFPR and
// MaxFPR: maxFPR in (0, 1], minFPR in [0, 1) and not above maxFPR. Its
// error is a *FPRError naming the field, so that a caller can name its
// own setting.
func CheckFPR(minFPR, maxFPR float64) error {
	switch {
	case !(maxFPR > 0 && maxFPR <= 1):
		return &FPRError{"MaxFPR", fmt.Sprintf("%v is outside (0, 1]", maxFPR)}
	case !(minFPR >= 0 && minFPR < 1) || math.IsNaN(minFPR):
		return &FPRError{"MinFPR", fmt.Sprintf("%v is outside [0, 1)", minFPR)}
	case minFPR > maxFPR:
		return &FPRError{"MinFPR", fmt.Sprintf("%v is above the maximum %v: no filter could pass", minFPR, maxFPR)}
	}
	return nil
}

// CheckCPUShare reports whether share is a valid Config.CPUShare: in
// (0, 1].
func CheckCPUShare(share float64) error {
	if !(share > 0 && share <= 1) {
		return fmt.Errorf("CPUShare %v outside (0, 1]", share)
	}
	return nil
}
