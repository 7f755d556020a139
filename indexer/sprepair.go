package indexer

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cfindexd/cfindexd/store/spindex"
)

// SPObserver hears the silent-payment backfill's repairs (*metrics.Metrics
// implements it). How far the index reaches is not reported here: readers
// take it from spindex.State, which every writer moves.
type SPObserver interface {
	// SPChecksumMismatch counts a damaged height found: a stored value
	// failing its CRC, counted once however many reads met it before the
	// repair.
	SPChecksumMismatch()
	// SPRepaired counts a rewind of the index below a damaged height,
	// after which the backfill builds the dropped blocks again.
	SPRepaired()
}

// spScrubChunk is how many heights one read transaction of the start-up
// scrub checks.
const spScrubChunk = spindex.MaxRange

// spDamage holds the lowest damaged height reported and not yet repaired,
// and wakes Run when one arrives.
type spDamage struct {
	mu      sync.Mutex
	pending bool
	height  uint32
	wake    chan struct{} // capacity 1: a report while one waits is merged
}

func newSPDamage() spDamage { return spDamage{wake: make(chan struct{}, 1)} }

// Damaged hands the backfill an error a read of its index returned. When
// err is a value failing its CRC (*spindex.MismatchError) at a height the
// index covers, the backfill drops the index from that height up and
// builds it again from the node, logging and counting the damage once;
// serving code calls it with every read error and goes on answering "not
// found" for those heights meanwhile. It reports whether err was such a
// mismatch. Safe for concurrent use; it does not block.
func (b *SPBackfill) Damaged(err error) bool {
	var m *spindex.MismatchError
	if !errors.As(err, &m) || m.What == "state" {
		return false
	}
	b.damage.report(m.Height)
	return true
}

// report records damage at height h and wakes Run.
func (d *spDamage) report(h uint32) {
	d.mu.Lock()
	if !d.pending || h < d.height {
		d.pending, d.height = true, h
	}
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// repair rewinds the index below the lowest damaged height reported, if
// any is still indexed and still damaged. A report of a height the index
// no longer covers (already rewound, or trimmed by a reorg) or has rebuilt
// since is dropped without a word.
func (b *SPBackfill) repair() error {
	d := &b.damage
	d.mu.Lock()
	pending, h := d.pending, d.height
	d.pending = false
	d.mu.Unlock()
	if !pending {
		return nil
	}
	if st, _ := b.index.State(); h >= st.Next {
		return nil
	}
	if _, err := b.index.Scrub(h, 1); err == nil {
		return nil // a late report: the height was rebuilt since
	}
	if b.obs != nil {
		b.obs.SPChecksumMismatch()
	}
	st, err := b.index.Rewind(h)
	if err != nil {
		return fmt.Errorf("%w: %w", errStore, err)
	}
	if b.obs != nil {
		b.obs.SPRepaired()
	}
	b.log.Warn().Uint32("height", h).Uint32("rebuild_from", st.Next).
		Msg("a stored silent-payment value fails its checksum; rebuilding the index from below it")
	return nil
}

// scrub checks every stored value of the index once, at start, in chunks
// of one read transaction each, and reports the first damaged height for
// repair (a value failing its CRC, or one missing or of the wrong shape);
// values above it are rebuilt with it, so it stops there.
func (b *SPBackfill) scrub(ctx context.Context) error {
	st, on := b.index.State()
	if !on {
		return nil
	}
	for from := st.Start; ctx.Err() == nil; {
		next, err := b.index.Scrub(from, spScrubChunk)
		switch {
		case b.Damaged(err):
			return nil
		case errors.Is(err, spindex.ErrCorrupt):
			b.damage.report(next)
			return nil
		case err != nil:
			return fmt.Errorf("%w: %w", errStore, err)
		}
		if st, _ := b.index.State(); next >= st.Next {
			return nil
		}
		from = next
	}
	return nil
}
