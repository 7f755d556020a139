package indexer

import (
	"context"
	"runtime"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/nodeclient"
	"github.com/cfindexd/cfindexd/store"
	"github.com/cfindexd/cfindexd/store/spindex"
)

// Node is what the follower asks of the node besides blocks.
type Node interface {
	// GetBestBlockHash returns the node's active tip.
	GetBestBlockHash(ctx context.Context) (chainhash.Hash, error)
	// GetBlockHash returns the hash of the node's active block at height.
	GetBlockHash(ctx context.Context, height int64) (chainhash.Hash, error)
	// GetBlockHeaderVerbose tells the height of a block the node knows.
	GetBlockHeaderVerbose(ctx context.Context, hash chainhash.Hash) (nodeclient.HeaderInfo, error)
}

// BlockSource fetches a block with the script of every output its
// non-coinbase inputs spend, in block order.
type BlockSource interface {
	FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, [][]byte, error)
}

// Store is the part of the store the follower writes.
type Store interface {
	Tip() (store.Tip, bool)
	HashAt(height uint32) (chainhash.Hash, error)
	HeaderAt(height uint32) (wire.BlockHeader, error)
	Headers(start, end uint32) ([]wire.BlockHeader, error)
	FilterHeadersByHeight(start, end uint32) ([]chainhash.Hash, error)
	CommitBatch(recs []store.BlockRecord) error
	Rollback(toHeight uint32) ([]store.BlockRecord, error)
	// Reorg disconnects the blocks above toHeight and commits recs in one
	// transaction, so readers never see the fork point as the tip.
	Reorg(toHeight uint32, recs []store.BlockRecord) ([]store.BlockRecord, error)
}

// Observer is told what the follower does, for metrics. Every method must
// return quickly. NopObserver ignores everything.
type Observer interface {
	// NodeTip reports the node's tip as last seen: its height and its
	// header's timestamp.
	NodeTip(height int64, blockTime time.Time)
	// NodeReachable reports after each round whether the node answered
	// (nil) or could not be asked at all (the error: refused, timed out,
	// credentials refused, warming up).
	NodeReachable(err error)
	// Committed reports a committed batch: the new tip, the blocks in the
	// batch and the bytes of their filters.
	Committed(tip store.Tip, blocks int, filterBytes int)
	// Reorg reports a rollback of depth blocks.
	Reorg(depth int)
	// Error reports a failed round by kind: one of ErrorKinds().
	Error(kind string)
}

// ErrorKinds returns the kinds Observer.Error reports: the node failed a
// round ("node"), the store failed ("store"), the node is on another chain
// ("network"), a reorg was refused (ErrDeepReorg, ErrChainVanished:
// "reorg"), or one of the follower's goroutines panicked ("panic").
func ErrorKinds() []string { return []string{"node", "store", "network", "reorg", "panic"} }

// NopObserver is an Observer that does nothing.
type NopObserver struct{}

// NodeTip implements Observer.
func (NopObserver) NodeTip(int64, time.Time) {}

// NodeReachable implements Observer.
func (NopObserver) NodeReachable(error) {}

// Committed implements Observer.
func (NopObserver) Committed(store.Tip, int, int) {}

// Reorg implements Observer.
func (NopObserver) Reorg(int) {}

// Error implements Observer.
func (NopObserver) Error(string) {}

// Config tunes a Follower. Zero fields take the defaults noted.
type Config struct {
	// Genesis is the genesis hash of the configured network; the node's
	// block 0 must equal it.
	Genesis chainhash.Hash
	// Workers is how many blocks are fetched and filtered at once (8).
	Workers int
	// SPRunsInHand bounds, while a round builds silent-payment data, the
	// runs that workers hold at once, fetching or building them (twice
	// GOMAXPROCS, at most Workers). The tweak work keeps a run's blocks
	// in hand for a long time and needs a processor throughout: each core
	// gets one run to work on and one being fetched, and further workers
	// would only hold blocks while they wait for a core.
	SPRunsInHand int
	// BatchBlocks is the most blocks committed in one transaction (500).
	BatchBlocks int
	// CommitEvery bounds how long fetched blocks wait before a commit (1s),
	// so a crash loses little work and progress is visible.
	CommitEvery time.Duration
	// PollInterval is how often the node is asked for its tip when nothing
	// wakes the follower earlier (1s).
	PollInterval time.Duration
	// ProgressEvery is the interval of progress lines during catch-up (5s).
	ProgressEvery time.Duration
	// LiveBlocks: a round with at most this many new blocks logs one line
	// per block instead of progress lines (6).
	LiveBlocks int
	// MaxBackoff caps the wait between failed rounds (30s); the first waits about 1s.
	MaxBackoff time.Duration

	// ReorgSafetyDepth is the deepest reorg the follower writes on its own
	// (DefaultReorgSafetyDepth): a node whose chain leaves the index's
	// further below the indexed tip stops Run with ErrDeepReorg, and one
	// that shares only the genesis block with more than deepReorgLogDepth
	// indexed blocks with ErrChainVanished, unless AllowDeepReorg is set.
	// A node that is merely behind on the same chain (reindexing, syncing)
	// is waited for, never followed down that far.
	ReorgSafetyDepth uint32
	// AllowDeepReorg follows reorgs of any depth.
	AllowDeepReorg bool
	// ReorgSettle is how long the node must stay on a chain with no more
	// work than the indexed one before the follower moves the store to it
	// (DefaultReorgSettle). Until then the store keeps serving the indexed
	// chain, so light clients never see the announced tip lose work while
	// the node is in the middle of a reorg. Negative: follow at once.
	ReorgSettle time.Duration

	// SilentPayments, if set and enabled, is the store's silent-payment
	// index: the follower builds each block's entry in the same pass as
	// its filter and commits it with the filter whenever the index's
	// frontier has reached the block; SPBackfill covers the rest.
	SilentPayments *spindex.Index
}

// Defaults of the reorg keys of Config.
const (
	DefaultReorgSafetyDepth = 144
	DefaultReorgSettle      = 10 * time.Second
)

// deepReorgLogDepth: reorgs deeper than this are logged at warn level
// (Bitcoin's customary six confirmations), shallower ones at info.
const deepReorgLogDepth = 6

func (c Config) withDefaults() Config {
	if c.Workers <= 0 {
		c.Workers = 8
	}
	if c.BatchBlocks <= 0 {
		c.BatchBlocks = 500
	}
	if c.SPRunsInHand <= 0 {
		c.SPRunsInHand = 2 * runtime.GOMAXPROCS(0)
	}
	c.SPRunsInHand = min(c.SPRunsInHand, c.Workers)
	if c.CommitEvery <= 0 {
		c.CommitEvery = time.Second
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.ProgressEvery <= 0 {
		c.ProgressEvery = 5 * time.Second
	}
	if c.LiveBlocks <= 0 {
		c.LiveBlocks = 6
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 30 * time.Second
	}
	if c.ReorgSafetyDepth == 0 {
		c.ReorgSafetyDepth = DefaultReorgSafetyDepth
	}
	if c.ReorgSettle == 0 {
		c.ReorgSettle = DefaultReorgSettle
	}
	return c
}
