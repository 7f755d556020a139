package btcdtest

import (
	"bytes"
	"context"
	"encoding/hex"
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

// FilterRecord is btcd's view of one active-chain block: its hash, basic
// filter (wire form) and filter header.
type FilterRecord struct {
	Hash         chainhash.Hash
	Filter       []byte
	FilterHeader chainhash.Hash
}

// oracleBatch is how many heights FilterChain asks for per JSON-RPC batch.
const oracleBatch = 200

// FilterChain returns btcd's block hash, filter and filter header for
// every height 0..tip of its active chain, asked for in JSON-RPC batches
// (three per oracleBatch heights): the oracle for comparing whole stores
// quickly (CompareRecords), where CompareStore asks three requests per
// block.
func (n *Node) FilterChain(ctx context.Context) ([]FilterRecord, error) {
	_, tip, err := n.BestBlock(ctx)
	if err != nil {
		return nil, err
	}
	recs := make([]FilterRecord, tip+1)
	for start := int32(0); start <= tip; start += oracleBatch {
		end := min(tip, start+oracleBatch-1)
		hashes := make([]string, end-start+1)
		calls := make([]batchCall, len(hashes))
		for i := range calls {
			calls[i] = batchCall{method: "getblockhash", params: []any{start + int32(i)}, result: &hashes[i]}
		}
		if err := n.runBatch(ctx, calls); err != nil {
			return nil, err
		}
		filters := make([]string, len(hashes))
		headers := make([]string, len(hashes))
		calls = calls[:0]
		for i, h := range hashes {
			calls = append(calls,
				batchCall{method: "getcfilter", params: []any{h, 0}, result: &filters[i]},
				batchCall{method: "getcfilterheader", params: []any{h, 0}, result: &headers[i]})
		}
		if err := n.runBatch(ctx, calls); err != nil {
			return nil, err
		}
		for i := range hashes {
			r := &recs[int(start)+i]
			if r.Hash, err = parseHash("getblockhash", hashes[i]); err != nil {
				return nil, err
			}
			if r.Filter, err = hex.DecodeString(filters[i]); err != nil {
				return nil, fmt.Errorf("getcfilter %s: hex: %w", hashes[i], err)
			}
			if r.FilterHeader, err = parseHash("getcfilterheader", headers[i]); err != nil {
				return nil, err
			}
		}
	}
	return recs, nil
}

// runBatch sends calls as one batch and returns the first error.
func (n *Node) runBatch(ctx context.Context, calls []batchCall) error {
	if err := n.batch(ctx, calls); err != nil {
		return err
	}
	for _, c := range calls {
		if c.err != nil {
			return c.err
		}
	}
	return nil
}

// CompareRecords checks that the store's active chain equals want (from
// FilterChain): same tip, and at every height the same block hash, filter
// and filter header. It returns the first difference.
func CompareRecords(st *store.Store, want []FilterRecord) error {
	tip, ok := st.Tip()
	if !ok || len(want) == 0 || int(tip.Height) != len(want)-1 || tip.Hash != want[len(want)-1].Hash {
		return fmt.Errorf("store tip %d %s (present %v), node tip %d", tip.Height, tip.Hash, ok, len(want)-1)
	}
	for start := uint32(0); start <= tip.Height; start += store.MaxRange {
		end := min(tip.Height, start+store.MaxRange-1)
		recs, err := st.FiltersByHeight(start, end)
		if err != nil {
			return err
		}
		if len(recs) != int(end-start+1) {
			return fmt.Errorf("store has %d records for heights %d..%d", len(recs), start, end)
		}
		for _, r := range recs {
			w := want[r.Height]
			switch {
			case r.Hash != w.Hash:
				return fmt.Errorf("height %d: store has block %s, node %s", r.Height, r.Hash, w.Hash)
			case !bytes.Equal(r.Filter, w.Filter):
				return fmt.Errorf("height %d block %s: filter %x, btcd %x", r.Height, r.Hash, r.Filter, w.Filter)
			case r.FilterHeader != w.FilterHeader:
				return fmt.Errorf("height %d block %s: filter header %s, btcd %s", r.Height, r.Hash, r.FilterHeader, w.FilterHeader)
			}
		}
		if end == tip.Height {
			break
		}
	}
	return nil
}
