package indexer

import (
	"context"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/gcs"
)

// RebuildFilter fetches the block hash, at height, from the node again and
// returns its BIP-158 basic filter, built as the follower builds every
// filter. It writes nothing: the caller checks the filter against the
// stored filter-header chain (store.Repair). It may run alongside Run.
func (f *Follower) RebuildFilter(ctx context.Context, height uint32, hash chainhash.Hash) ([]byte, error) {
	var b gcs.BasicBuilder
	r, err := f.fetchOne(ctx, &b, fetchJob{height: height, hash: hash, hashKnown: true})
	if err != nil {
		return nil, err
	}
	return r.rec.Filter, nil
}
