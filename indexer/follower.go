package indexer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/bitcoind"
	"github.com/cfindexd/cfindexd/store"
)

// Node is what the follower asks of the node besides blocks.
type Node interface {
	// GetBestBlockHash returns the node's active tip.
	GetBestBlockHash(ctx context.Context) (chainhash.Hash, error)
	// GetBlockHash returns the hash of the node's active block at height.
	GetBlockHash(ctx context.Context, height int64) (chainhash.Hash, error)
	// GetBlockHeaderVerbose tells the height of a block the node knows.
	GetBlockHeaderVerbose(ctx context.Context, hash chainhash.Hash) (bitcoind.HeaderInfo, error)
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
	// NodeTip reports the node's tip height as last seen.
	NodeTip(height int64)
	// Committed reports a committed batch: the new tip, the blocks in the
	// batch and the bytes of their filters.
	Committed(tip store.Tip, blocks int, filterBytes int)
	// Reorg reports a rollback of depth blocks.
	Reorg(depth int)
	// Error reports a failed round by kind ("node", "store", "network").
	Error(kind string)
}

// NopObserver is an Observer that does nothing.
type NopObserver struct{}

// NodeTip implements Observer.
func (NopObserver) NodeTip(int64) {}

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
}

func (c Config) withDefaults() Config {
	if c.Workers <= 0 {
		c.Workers = 8
	}
	if c.BatchBlocks <= 0 {
		c.BatchBlocks = 500
	}
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
	return c
}

// Follower keeps a Store equal to a node's active chain. Create it with
// NewFollower and run it with Run.
type Follower struct {
	cfg    Config
	node   Node
	source BlockSource
	store  Store
	wake   <-chan struct{}
	obs    Observer
	log    zerolog.Logger
}

// NewFollower wires a follower. wake may be nil; every value received on it
// (a ZMQ notification, say) starts a round at once instead of at the next
// poll. obs may be nil.
func NewFollower(cfg Config, node Node, source BlockSource, st Store, wake <-chan struct{}, obs Observer, log zerolog.Logger) *Follower {
	if obs == nil {
		obs = NopObserver{}
	}
	return &Follower{cfg: cfg.withDefaults(), node: node, source: source, store: st, wake: wake, obs: obs, log: log}
}

// Run follows the node until ctx ends, then returns nil after committing
// what it had fetched. It returns an error only for conditions a retry
// cannot fix (bitcoind.ErrWrongNetwork, ErrChainMismatch, a failing store).
func (f *Follower) Run(ctx context.Context) error {
	retry := bitcoind.NewBackoff(time.Second, f.cfg.MaxBackoff, rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x5eed)))
	failures := 0
	checkedNetwork := false
	poll := time.NewTicker(f.cfg.PollInterval)
	defer poll.Stop()
	for {
		var err error
		if !checkedNetwork {
			err = f.checkNetwork(ctx)
			checkedNetwork = err == nil
		}
		if err == nil {
			err = f.Sync(ctx)
		}
		if ctx.Err() != nil {
			return nil
		}
		wait := f.cfg.PollInterval
		switch {
		case err == nil:
			failures = 0
			retry.Reset()
		case errors.Is(err, bitcoind.ErrWrongNetwork), errors.Is(err, ErrChainMismatch), errors.Is(err, errStore), errors.Is(err, errPanic):
			f.obs.Error(errorKind(err))
			return err
		default:
			failures++
			f.obs.Error(errorKind(err))
			wait = retry.Next()
			f.log.Warn().Err(err).Int("attempt", failures).Dur("retry_in", wait).Msg("sync round failed; retrying")
		}
		if err == nil {
			select {
			case <-ctx.Done():
				return nil
			case <-f.wake:
			case <-poll.C:
			}
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// errStore marks store failures, which end Run: a store that cannot write
// must not be papered over by retries.
var errStore = errors.New("store")

func errorKind(err error) string {
	switch {
	case errors.Is(err, bitcoind.ErrWrongNetwork), errors.Is(err, ErrChainMismatch):
		return "network"
	case errors.Is(err, errStore):
		return "store"
	case errors.Is(err, errPanic):
		return "panic"
	default:
		return "node"
	}
}

// checkNetwork compares the node's genesis with the configured one.
func (f *Follower) checkNetwork(ctx context.Context) error {
	h, err := f.node.GetBlockHash(ctx, 0)
	if err != nil {
		return fmt.Errorf("getblockhash 0: %w", err)
	}
	if h != f.cfg.Genesis {
		return fmt.Errorf("%w: node genesis %s, configured chain's genesis %s", bitcoind.ErrWrongNetwork, h, f.cfg.Genesis)
	}
	return nil
}

// Sync runs one round: it brings the store to the node's current tip,
// rolling back first if the node left the store's branch. It returns nil
// when the store has reached the tip the round started with.
func (f *Follower) Sync(ctx context.Context) error {
	best, err := f.node.GetBestBlockHash(ctx)
	if err != nil {
		return fmt.Errorf("getbestblockhash: %w", err)
	}
	tip, have := f.store.Tip()
	if have && best == tip.Hash {
		f.obs.NodeTip(int64(tip.Height))
		return nil
	}
	info, err := f.node.GetBlockHeaderVerbose(ctx, best)
	if err != nil {
		return fmt.Errorf("getblockheader %s: %w", best, err)
	}
	bestHeight := int64(info.Height)
	f.obs.NodeTip(bestHeight)

	start := uint32(0)
	var reorg *pendingReorg
	if have {
		fork, err := f.findFork(ctx, tip, bestHeight)
		if err != nil {
			return err
		}
		if fork < tip.Height {
			if reorg, err = f.prepareReorg(tip, fork); err != nil {
				return err
			}
		}
		start = fork + 1
	}
	if int64(start) > bestHeight {
		if reorg != nil {
			// The node's chain ends at the fork point (blocks were
			// invalidated, none mined since): nothing to switch to.
			return f.rollback(reorg)
		}
		return nil
	}
	return f.fetchRange(ctx, start, uint32(bestHeight), reorg)
}

// prepareReorg describes the switch from the store's branch at tip to the
// node's branch above fork.
func (f *Follower) prepareReorg(tip store.Tip, fork uint32) (*pendingReorg, error) {
	hash, err := f.store.HashAt(fork)
	if err != nil {
		return nil, fmt.Errorf("%w: hash at fork %d: %w", errStore, fork, err)
	}
	fh, err := f.store.FilterHeadersByHeight(fork, fork)
	if err != nil || len(fh) != 1 {
		return nil, fmt.Errorf("%w: filter header at fork %d: %w", errStore, fork, err)
	}
	return &pendingReorg{Fork: fork, ForkHash: hash, ForkFilterHeader: fh[0], OldTip: tip}, nil
}

// rollback disconnects the store's blocks above the fork without a new
// branch to connect.
func (f *Follower) rollback(r *pendingReorg) error {
	if _, err := f.store.Rollback(r.Fork); err != nil {
		return fmt.Errorf("%w: rollback to %d: %w", errStore, r.Fork, err)
	}
	depth := int(r.OldTip.Height - r.Fork)
	f.obs.Reorg(depth)
	f.obs.Committed(store.Tip{Height: r.Fork, Hash: r.ForkHash, FilterHeader: r.ForkFilterHeader}, 0, 0)
	f.log.Info().Uint32("fork_height", r.Fork).Int("depth", depth).Str("old_tip", r.OldTip.Hash.String()).Msg("reorg: rolled back to the node's tip")
	return nil
}

// findFork returns the highest height at or below the store's tip whose
// block the node also has on its active chain.
func (f *Follower) findFork(ctx context.Context, tip store.Tip, nodeHeight int64) (uint32, error) {
	agrees := func(h uint32) (bool, error) {
		ours, err := f.store.HashAt(h)
		if err != nil {
			return false, fmt.Errorf("%w: hash at %d: %w", errStore, h, err)
		}
		theirs, err := f.node.GetBlockHash(ctx, int64(h))
		if err != nil {
			return false, fmt.Errorf("getblockhash %d: %w", h, err)
		}
		return ours == theirs, nil
	}
	hi := tip.Height
	if int64(hi) > nodeHeight {
		hi = uint32(nodeHeight)
	}
	ok, err := agrees(hi)
	if err != nil || ok {
		return hi, err
	}
	ok, err = agrees(0)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, ErrChainMismatch
	}
	// Invariant: agrees(lo) and !agrees(hi).
	lo := uint32(0)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := agrees(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}
