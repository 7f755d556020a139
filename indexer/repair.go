package indexer

import (
	"context"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// RebuildBlock fetches the block hash, at height, from the node again and
// returns its header (checked to hash to hash) and its BIP-158 basic
// filter, built as the follower builds every filter. It writes nothing:
// the caller checks both against the stored chains (store.Repair). It may
// run alongside Run.
func (f *Follower) RebuildBlock(ctx context.Context, height uint32, hash chainhash.Hash) (wire.BlockHeader, []byte, error) {
	var b blockBuilders
	r, err := f.fetchOne(ctx, &b, fetchJob{height: height, hash: hash, hashKnown: true})
	if err != nil {
		return wire.BlockHeader{}, nil, err
	}
	return r.rec.Header, r.rec.Filter, nil
}
