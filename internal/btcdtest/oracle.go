package btcdtest

import (
	"context"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/store"
)

// FilterOf asks btcd (its getcfilter/getcfilterheader) for the basic filter
// and filter header of a block: the oracle for every filter cfindexd builds.
func (n *Node) FilterOf(ctx context.Context, hash chainhash.Hash) ([]byte, chainhash.Hash, error) {
	f, err := n.CFilter(ctx, hash)
	if err != nil {
		return nil, chainhash.Hash{}, fmt.Errorf("getcfilter %s: %w", hash, err)
	}
	h, err := n.CFilterHeader(ctx, hash)
	if err != nil {
		return nil, chainhash.Hash{}, fmt.Errorf("getcfilterheader %s: %w", hash, err)
	}
	return f, h, nil
}

// CompareStore checks that the store's active chain equals btcd's from
// height from to the tip: same tip, and at every height the same block hash,
// filter and filter header as btcd's own index. It returns the first
// difference.
func (n *Node) CompareStore(ctx context.Context, st *store.Store, from uint32) error {
	best, bestHeight, err := n.BestBlock(ctx)
	if err != nil {
		return err
	}
	tip, ok := st.Tip()
	if !ok || tip.Hash != best || int32(tip.Height) != bestHeight {
		return fmt.Errorf("store tip %d %s, node tip %d %s", tip.Height, tip.Hash, bestHeight, best)
	}
	// The store answers at most store.MaxRange heights per read.
	for start := from; start <= tip.Height; start += store.MaxRange {
		end := min(tip.Height, start+store.MaxRange-1)
		if err := n.compareRange(ctx, st, start, end); err != nil {
			return err
		}
		if end == tip.Height {
			break // start += MaxRange could wrap at the top of uint32
		}
	}
	return nil
}

// compareRange compares heights start..end (at most store.MaxRange) of the
// store with btcd's index.
func (n *Node) compareRange(ctx context.Context, st *store.Store, start, end uint32) error {
	recs, err := st.FiltersByHeight(start, end)
	if err != nil {
		return err
	}
	for _, r := range recs {
		want, err := n.BlockHash(ctx, int32(r.Height))
		if err != nil {
			return err
		}
		if r.Hash != want {
			return fmt.Errorf("height %d: store has block %s, node %s", r.Height, r.Hash, want)
		}
		filter, header, err := n.FilterOf(ctx, r.Hash)
		if err != nil {
			return err
		}
		if string(filter) != string(r.Filter) {
			return fmt.Errorf("height %d block %s: filter %x, btcd %x", r.Height, r.Hash, r.Filter, filter)
		}
		if header != r.FilterHeader {
			return fmt.Errorf("height %d block %s: filter header %s, btcd %s", r.Height, r.Hash, r.FilterHeader, header)
		}
	}
	return nil
}
