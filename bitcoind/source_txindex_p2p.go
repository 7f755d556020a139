package bitcoind

import (
	"context"
	"errors"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// rawBlocks fetches the run's raw blocks over P2P when that path is
// configured, and over getblock otherwise or when P2P fails for the run.
func (s *txIndexSource) rawBlocks(ctx context.Context, hashes []chainhash.Hash) ([]*scannedBlock, error) {
	if s.p2p != nil {
		raws, err := s.p2p.fetch(ctx, hashes)
		if err == nil {
			return raws, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !errors.Is(err, errP2PUnavailable) {
			s.p2p.log.Debug().Err(err).Stringer("block", hashes[0]).Int("blocks", len(hashes)).Msg("P2P fetch failed; using getblock for this run")
		}
	}
	return s.c.getScannedBlocks(ctx, hashes)
}

// Close releases the P2P connections, if any. The source must not be used
// afterwards for P2P fetches (RPC still works).
func (s *txIndexSource) Close() error {
	if s.p2p != nil {
		return s.p2p.Close()
	}
	return nil
}
