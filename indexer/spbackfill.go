package indexer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/backoff"
	"github.com/cfindexd/cfindexd/silentpay"
	"github.com/cfindexd/cfindexd/store"
	"github.com/cfindexd/cfindexd/store/spindex"
)

// SPChain is what SPBackfill reads of the store's active chain
// (*store.Store).
type SPChain interface {
	Tip() (store.Tip, bool)
	HashAt(height uint32) (chainhash.Hash, error)
	TipChanged() <-chan struct{}
}

// spBackfillBatch is how many blocks SPBackfill commits at once: the
// progress a kill -9 can lose, and the blocks held in memory (their
// silent-payment data only).
const spBackfillBatch = 64

// SPBackfill brings the silent-payment index up to the store's tip from
// wherever its frontier is: on a store built before the index was turned
// on, from the network's start height; after a crash, from its last
// commit (the frontier moves in the transaction that writes the entries,
// so nothing is lost or done twice). It runs beside the follower, which
// keeps serving and indexing filters meanwhile.
//
// The split of work: the follower attaches a block's entry itself only
// when the frontier is at that block (its round starts at the index's
// frontier); while the backfill is behind, new blocks get their filters at
// once and their entries when the backfill reaches them, since it follows
// the tip, not the height it started at. Once it has caught up it waits,
// and the follower keeps the index current in the same transactions as
// the filters. Entries are never written out of order, so the index is
// always a prefix of the active chain from its start height, and readers
// see how far it reaches in spindex.State.
type SPBackfill struct {
	index   *spindex.Index
	chain   SPChain
	source  BlockSource
	workers int
	obs     SPObserver
	log     zerolog.Logger
	// sizer sizes the runs when the source fetches runs.
	sizer runSizer

	damage spDamage
}

// NewSPBackfill wires a backfill of index, fetching blocks from source
// with up to workers at once (at least 1, at most twice GOMAXPROCS: as
// Config.SPRunsInHand, the tweak work needs a core for each run in hand),
// reporting repairs to obs (may be nil).
func NewSPBackfill(index *spindex.Index, chain SPChain, source BlockSource, workers int, obs SPObserver, log zerolog.Logger) *SPBackfill {
	workers = max(1, min(workers, 2*runtime.GOMAXPROCS(0)))
	return &SPBackfill{index: index, chain: chain, source: source, workers: workers, obs: obs, log: log,
		damage: newSPDamage()}
}

// Run backfills until ctx ends, then returns nil; it returns an error only
// when the store fails. A node that fails is retried with backoff.
func (b *SPBackfill) Run(ctx context.Context) error {
	retry := backoff.New(time.Second, 30*time.Second, rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x5b)))
	lastLog := time.Time{}
	if err := b.scrub(ctx); err != nil {
		return err
	}
	for {
		changed := b.chain.TipChanged()
		if err := b.repair(); err != nil {
			return err
		}
		done, err := b.step(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var wait <-chan time.Time
		switch {
		case err == nil && done:
			st, _ := b.index.State()
			if up, ok := st.IndexedUpTo(); ok && !lastLog.IsZero() {
				b.log.Info().Uint32("indexed_up_to", up).Msg("silent-payment index caught up with the tip")
				lastLog = time.Time{}
			}
		case err == nil:
			retry.Reset()
			if time.Since(lastLog) >= 5*time.Second {
				st, _ := b.index.State()
				tip, _ := b.chain.Tip()
				b.log.Info().Uint32("indexed_up_to", st.Next-1).Uint32("tip", tip.Height).Msg("building the silent-payment index")
				lastLog = time.Now()
			}
			continue
		case errors.Is(err, spindex.ErrStale) || errors.Is(err, store.ErrNotFound):
			b.log.Debug().Err(err).Msg("the chain moved under the silent-payment backfill; building again")
			continue
		case errors.Is(err, errStore):
			return err
		default:
			d := retry.Next()
			b.log.Warn().Err(err).Stringer("retry_in", d.Round(time.Millisecond)).Msg("silent-payment backfill failed; retrying")
			wait = time.After(d)
			changed = nil // a retry waits out its backoff
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-wait: // nil while there is no retry: never ready
		case <-b.damage.wake:
		}
	}
}

// step builds and commits the next batch above the frontier. It reports
// done when the index has reached the tip (or is not enabled).
func (b *SPBackfill) step(ctx context.Context) (bool, error) {
	st, on := b.index.State()
	tip, ok := b.chain.Tip()
	if !on || !ok || st.Next > tip.Height {
		return true, nil
	}
	end := min(tip.Height, st.Next+spBackfillBatch-1)
	blocks := make([]silentpay.Block, end-st.Next+1)
	if err := b.fetch(ctx, st.Next, blocks); err != nil {
		return false, err
	}
	entries := make([]spindex.Entry, len(blocks))
	prev := st.Header
	for i := range blocks {
		entries[i] = spindex.Entry{Height: st.Next + uint32(i), Hash: blocks[i].Hash,
			Block: spindex.NewBlock(silentpay.AppendTweakData(nil, blocks[i].Tweaks), blocks[i].Filter, prev)}
		prev = entries[i].Header
	}
	if err := b.index.Commit(entries); err != nil {
		if errors.Is(err, spindex.ErrStale) {
			return false, err
		}
		return false, fmt.Errorf("%w: %w", errStore, err)
	}
	b.log.Debug().Uint32("height", end).Int("blocks", len(entries)).Msg("committed silent-payment entries")
	return end == tip.Height, nil
}
