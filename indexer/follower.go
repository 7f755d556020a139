package indexer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/backoff"
	"github.com/cfindexd/cfindexd/nodeclient"
	"github.com/cfindexd/cfindexd/store"
)

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
	now    func() time.Time

	// Touched only by the goroutine that runs Sync.
	lowerWork lowerWorkState
	// nodeTipHash and nodeTipTime cache the timestamp of the node's tip
	// when it equals the store's, so an idle poll reads nothing else.
	nodeTipHash chainhash.Hash
	nodeTipTime time.Time
}

// lowerWorkState remembers that the node was seen on a chain with no more
// work than the indexed one (a reorg in progress), and since when.
type lowerWorkState struct {
	since  time.Time // zero: not seen
	behind bool      // the node is far behind on the indexed chain; logged
}

// NewFollower wires a follower. wake may be nil; every value received on it
// (a ZMQ notification, say) starts a round at once instead of at the next
// poll. obs may be nil.
func NewFollower(cfg Config, node Node, source BlockSource, st Store, wake <-chan struct{}, obs Observer, log zerolog.Logger) *Follower {
	if obs == nil {
		obs = NopObserver{}
	}
	return &Follower{cfg: cfg.withDefaults(), node: node, source: source, store: st, wake: wake, obs: obs, log: log, now: time.Now}
}

// Run follows the node until ctx ends, then returns nil after committing
// what it had fetched. It returns an error only for conditions a retry
// cannot fix (isFatal: nodeclient.IsPermanent — wrong network, credentials
// or TLS the node refuses, a prevout source it cannot serve —,
// ErrChainMismatch, ErrDeepReorg, ErrChainVanished, a failing store, a
// panic in one of its goroutines).
func (f *Follower) Run(ctx context.Context) error {
	retry := backoff.New(time.Second, f.cfg.MaxBackoff, rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x5eed)))
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
		var silent nodeSilentError
		if errors.As(err, &silent) {
			f.obs.NodeReachable(silent.err)
		} else {
			f.obs.NodeReachable(nil)
		}
		wait := f.cfg.PollInterval
		switch {
		case err == nil:
			failures = 0
			retry.Reset()
		case isFatal(err):
			f.obs.Error(errorKind(err))
			return err
		default:
			failures++
			f.obs.Error(errorKind(err))
			wait = retry.Next()
			f.log.Warn().Err(err).Int("attempt", failures).Stringer("retry_in", wait.Round(time.Millisecond)).Msg("sync round failed; retrying")
		}
		if err == nil {
			settled := f.settleTimer()
			select {
			case <-ctx.Done():
				settled.Stop()
				return nil
			case <-f.wake:
			case <-poll.C:
			case <-settled.C:
			}
			settled.Stop()
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

// settleTimer returns a timer that fires when the node, seen on a chain
// with no more work than the indexed one, will have stayed there for the
// settle time, so the follower re-checks then even if polls are rare; one
// that never fires otherwise.
func (f *Follower) settleTimer() *time.Timer {
	if f.lowerWork.since.IsZero() || f.cfg.ReorgSettle < 0 {
		t := time.NewTimer(time.Hour)
		t.Stop()
		return t
	}
	return time.NewTimer(max(f.lowerWork.since.Add(f.cfg.ReorgSettle).Sub(f.now()), 0))
}

// errStore marks store failures, which end Run: a store that cannot write
// must not be papered over by retries.
var errStore = errors.New("store")

// isFatal reports whether err ends Run.
func isFatal(err error) bool {
	if nodeclient.IsPermanent(err) {
		return true
	}
	for _, target := range []error{nodeclient.ErrWrongNetwork, ErrChainMismatch, ErrDeepReorg, ErrChainVanished, errStore, errPanic} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

func errorKind(err error) string {
	switch {
	case errors.Is(err, nodeclient.ErrWrongNetwork), errors.Is(err, ErrChainMismatch):
		return "network"
	case errors.Is(err, ErrDeepReorg), errors.Is(err, ErrChainVanished):
		return "reorg"
	case errors.Is(err, errStore):
		return "store"
	case errors.Is(err, errPanic):
		return "panic"
	default:
		return "node"
	}
}

// nodeSilentError marks a round that could not ask the node anything: its
// first call failed. Its text is the wrapped error's.
type nodeSilentError struct{ err error }

func (e nodeSilentError) Error() string { return e.err.Error() }
func (e nodeSilentError) Unwrap() error { return e.err }

// checkNetwork compares the node's genesis with the configured one.
func (f *Follower) checkNetwork(ctx context.Context) error {
	h, err := f.node.GetBlockHash(ctx, 0)
	if err != nil {
		return nodeSilentError{err} // the client's error names the call
	}
	if h != f.cfg.Genesis {
		return fmt.Errorf("%w: node genesis %s, configured chain's genesis %s", nodeclient.ErrWrongNetwork, h, f.cfg.Genesis)
	}
	return nil
}

// Sync runs one round: it brings the store to the node's current tip,
// rolling back first if the node left the store's branch. It returns nil
// when the store has reached the tip the round started with, and also when
// it keeps the indexed chain because the node's has no more work (a reorg
// in progress; see Config.ReorgSettle) or is far behind on the same chain.
func (f *Follower) Sync(ctx context.Context) error {
	best, err := f.node.GetBestBlockHash(ctx)
	if err != nil {
		return nodeSilentError{err} // the client's error names the call
	}
	tip, have := f.store.Tip()
	if have && best == tip.Hash {
		f.lowerWork = lowerWorkState{}
		return f.reportStoredNodeTip(tip)
	}
	info, err := f.node.GetBlockHeaderVerbose(ctx, best)
	if err != nil {
		return fmt.Errorf("node's tip %s: %w", best, err)
	}
	bestHeight := int64(info.Height)
	f.obs.NodeTip(bestHeight, info.Time)
	if !have {
		return f.fetchRange(ctx, 0, uint32(bestHeight), nil)
	}
	fork, err := f.findFork(ctx, tip, bestHeight)
	if err != nil {
		return err
	}
	if fork == tip.Height {
		// The node extends the indexed chain.
		f.lowerWork = lowerWorkState{}
		if int64(fork) >= bestHeight {
			return nil // the node moved back to our tip meanwhile
		}
		return f.fetchRange(ctx, fork+1, uint32(bestHeight), nil)
	}
	reorg, err := f.prepareReorg(tip, fork, best, bestHeight)
	if err != nil || reorg == nil {
		return err
	}
	if int64(fork) >= bestHeight {
		// The node's chain ends at the fork point (blocks were
		// invalidated, or the node is between the disconnects and the
		// connects of a reorg): it has less work than ours.
		if !reorg.Settled {
			return f.holdLowerWork(reorg)
		}
		return f.rollback(reorg)
	}
	err = f.fetchRange(ctx, fork+1, uint32(bestHeight), reorg)
	if errors.Is(err, errLowerWork) {
		return f.holdLowerWork(reorg)
	}
	if reorg.committed {
		f.lowerWork = lowerWorkState{}
	}
	return err
}

// reportStoredNodeTip reports the node's tip when it is the store's: its
// timestamp comes from the stored header, read once per tip.
func (f *Follower) reportStoredNodeTip(tip store.Tip) error {
	if f.nodeTipHash != tip.Hash {
		hdr, err := f.store.HeaderAt(tip.Height)
		if err != nil {
			return fmt.Errorf("%w: header at %d: %w", errStore, tip.Height, err)
		}
		f.nodeTipHash, f.nodeTipTime = tip.Hash, hdr.Timestamp
	}
	f.obs.NodeTip(int64(tip.Height), f.nodeTipTime)
	return nil
}

// prepareReorg describes the switch from the store's branch at tip to the
// node's branch above fork (the node's tip is best at bestHeight). It
// refuses a reorg deeper than Config.ReorgSafetyDepth, or onto a chain
// that shares only the genesis block with ours, with ErrDeepReorg or
// ErrChainVanished; when the node's chain is only behind ours (it ends at
// the fork), such a reorg is not refused but waited out: it returns nil
// and no error.
func (f *Follower) prepareReorg(tip store.Tip, fork uint32, best chainhash.Hash, bestHeight int64) (*pendingReorg, error) {
	depth := tip.Height - fork
	vanished := fork == 0 && depth > deepReorgLogDepth
	deep := depth > f.cfg.ReorgSafetyDepth
	if (deep || vanished) && !f.cfg.AllowDeepReorg {
		if int64(fork) >= bestHeight {
			f.waitForNodeBehind(tip, best, bestHeight)
			return nil, nil
		}
		return nil, f.refuseReorg(tip, fork, best, bestHeight, vanished)
	}
	f.lowerWork.behind = false
	hash, err := f.store.HashAt(fork)
	if err != nil {
		return nil, fmt.Errorf("%w: hash at fork %d: %w", errStore, fork, err)
	}
	fh, err := f.store.FilterHeadersByHeight(fork, fork)
	if err != nil || len(fh) != 1 {
		return nil, fmt.Errorf("%w: filter header at fork %d: %w", errStore, fork, err)
	}
	oldWork, err := storedWork(f.store, fork+1, tip.Height)
	if err != nil {
		return nil, fmt.Errorf("%w: work of heights %d..%d: %w", errStore, fork+1, tip.Height, err)
	}
	settled := f.cfg.ReorgSettle < 0 ||
		(!f.lowerWork.since.IsZero() && f.now().Sub(f.lowerWork.since) >= f.cfg.ReorgSettle)
	return &pendingReorg{Fork: fork, ForkHash: hash, ForkFilterHeader: fh[0], OldTip: tip, OldWork: oldWork,
		NodeTip: best, NodeHeight: bestHeight, Settled: settled}, nil
}

// refuseReorg builds the error that stops Run on a reorg the operator has
// to decide about.
func (f *Follower) refuseReorg(tip store.Tip, fork uint32, best chainhash.Hash, bestHeight int64, vanished bool) error {
	depth := tip.Height - fork
	what := fmt.Sprintf("the node's active chain (tip %s at height %d) leaves the indexed chain at height %d, %d blocks below the indexed tip %s at height %d",
		best, bestHeight, fork, depth, tip.Hash, tip.Height)
	sentinel, why := ErrDeepReorg, fmt.Sprintf("reorgsafetydepth is %d", f.cfg.ReorgSafetyDepth)
	if vanished {
		sentinel = ErrChainVanished
		why = "was the node's data wiped or replaced? (btcd --regtest starts an empty chain on every restart; btcd --simnet keeps it)"
	}
	return fmt.Errorf("%w: %s; %s. To index the node's chain from scratch, restart cfindexd with --reindex; to let cfindexd follow such a reorg, set allowdeepreorg = true",
		sentinel, what, why)
}

// waitForNodeBehind logs, once, that the node's tip is an indexed block far
// below the indexed tip: the node is reindexing or syncing (or blocks were
// invalidated, or it was wiped and has mined nothing yet). The store keeps
// serving; the node is followed again once it passes the indexed tip, and
// refused as a deep reorg if it builds another branch.
func (f *Follower) waitForNodeBehind(tip store.Tip, best chainhash.Hash, bestHeight int64) {
	if f.lowerWork.behind {
		return
	}
	f.lowerWork.behind = true
	f.log.Warn().Int64("node_height", bestHeight).Str("node_tip", best.String()).Uint32("indexed_height", tip.Height).
		Uint32("reorgsafetydepth", f.cfg.ReorgSafetyDepth).
		Msg("the node's tip is an indexed block far below the indexed tip (node reindexing or syncing? blocks invalidated? data wiped?); serving the indexed chain until the node passes it. If the node has dropped these blocks for good, restart cfindexd with --reindex, or set allowdeepreorg = true to follow it down")
}

// holdLowerWork keeps the indexed chain while the node's has no more work:
// it starts the settle time on the first sighting, and returns nil so that
// Run re-checks at the next poll.
func (f *Follower) holdLowerWork(r *pendingReorg) error {
	if f.lowerWork.since.IsZero() {
		f.lowerWork.since = f.now()
		f.log.Info().Uint32("fork_height", r.Fork).Int("depth", int(r.OldTip.Height-r.Fork)).
			Int64("node_height", r.NodeHeight).Str("node_tip", r.NodeTip.String()).Uint32("indexed_height", r.OldTip.Height).
			Stringer("settle", f.cfg.ReorgSettle).
			Msg("the node's chain has no more work than the indexed one (a reorg in progress?); serving the indexed chain until the node's has more, or stays this way for the settle time")
	}
	return nil
}

// rollback disconnects the store's blocks above the fork without a new
// branch to connect; the node has stayed on its shorter chain for the
// settle time.
func (f *Follower) rollback(r *pendingReorg) error {
	if _, err := f.store.Rollback(r.Fork); err != nil {
		return fmt.Errorf("%w: rollback to %d: %w", errStore, r.Fork, err)
	}
	r.committed = true
	f.lowerWork = lowerWorkState{}
	depth := int(r.OldTip.Height - r.Fork)
	f.obs.Reorg(depth)
	f.obs.Committed(store.Tip{Height: r.Fork, Hash: r.ForkHash, FilterHeader: r.ForkFilterHeader}, 0, 0)
	reorgLog(f.log, depth).Uint32("fork_height", r.Fork).Int("depth", depth).Str("old_tip", r.OldTip.Hash.String()).
		Stringer("settle", f.cfg.ReorgSettle).
		Msg("reorg: rolled back to the node's tip, which has stayed on a chain with less work for the settle time (light clients that saw the old tip may drop this server)")
	return nil
}

// reorgLog starts a log line about a reorg of depth blocks: warn level
// beyond deepReorgLogDepth, info otherwise.
func reorgLog(log zerolog.Logger, depth int) *zerolog.Event {
	if depth > deepReorgLogDepth {
		return log.Warn()
	}
	return log.Info()
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
			return false, fmt.Errorf("node's block at height %d: %w", h, err)
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
		ours, _ := f.store.HashAt(0)
		theirs, _ := f.node.GetBlockHash(ctx, 0)
		return 0, fmt.Errorf("%w: the node's block 0 is %s, the index's %s: the node now runs another network; point rpcconnect and rpcport at a node of the configured chain", ErrChainMismatch, theirs, ours)
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
