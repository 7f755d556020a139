package prevouts

import (
	"context"
	"errors"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
	"github.com/cfindexd/cfindexd/nodep2p"
)

// What one run holds is bounded: a run is asked for in one request of as
// many blocks as the recent block size (observeSize) says fit in
// runCapBytes (1.5 times the runs the indexer sizes), and reading the
// answer stops once it holds twice that — the rest of a getdata's blocks
// or of a getblock batch reply is not read (that connection is dropped),
// and the caller fetches the remaining blocks with the same turn
// (RunBlockSource's prefix). Runs are sized by the average block
// before they are fetched, and when blocks grow suddenly (a test chain's
// empty activation blocks giving way to full ones) eight workers
// fetching sixteen 1 MB blocks each held 128 MB of blocks, and over
// JSON-RPC three times that in hex replies.
const runCapBytes = 3 << 20

// rawBlocksCapped fetches a prefix of the run's blocks (at least one)
// holding about 2×s.runCap bytes at most.
func (s *txIndexSource) rawBlocksCapped(ctx context.Context, hashes []chainhash.Hash) ([]*wirescan.ScannedBlock, error) {
	n := len(hashes)
	if size := s.blockSize.Load(); size > 0 {
		n = min(n, max(1, int(int64(s.runCap)/size)))
	}
	// Reading stops only well past what the request was sized for, so a
	// run of blocks a little larger than the estimate is not cut (the rest
	// would be sent twice), while a run of blocks much larger is.
	blocks, err := s.rawBlocks(ctx, hashes[:n], 2*s.runCap)
	if err != nil {
		return nil, err
	}
	for _, b := range blocks {
		s.observeSize(len(b.Raw))
	}
	return blocks, nil
}

// observeSize keeps blockSize near the recent block size: a larger block
// takes its place at once, smaller ones pull it down slowly (as the
// indexer's run sizer does, so the runs it sizes fit in runCapBytes).
func (s *txIndexSource) observeSize(size int) {
	for {
		old := s.blockSize.Load()
		next := int64(size)
		if next < old {
			next = old - old/8 + next/8
		}
		if s.blockSize.CompareAndSwap(old, next) {
			return
		}
	}
}

// rawBlocks fetches the run's raw blocks over P2P when that path is
// configured, and over getblock otherwise or when P2P fails for the run;
// with maxBytes > 0 possibly only its first blocks (rawBlocksCapped).
func (s *txIndexSource) rawBlocks(ctx context.Context, hashes []chainhash.Hash, maxBytes int) ([]*wirescan.ScannedBlock, error) {
	if s.p2p != nil {
		raws, err := s.p2p.Fetch(ctx, hashes, maxBytes)
		if err == nil {
			return raws, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !errors.Is(err, nodep2p.ErrUnavailable) {
			s.log.Debug().Err(err).Stringer("block", hashes[0]).Int("blocks", len(hashes)).Msg("P2P fetch failed; using getblock for this run")
		}
	}
	return s.c.GetScannedBlocks(ctx, hashes, maxBytes)
}

// Close releases the P2P connections, if any. The source must not be used
// afterwards for P2P fetches (RPC still works). It logs (at debug) what
// the P2P path served.
func (s *txIndexSource) Close() error {
	if s.p2p != nil {
		st := s.p2p.Stats()
		s.log.Debug().Int64("runs", st.Served).Int64("connections", st.Dials).Msg("raw blocks over the node's P2P port")
		return s.p2p.Close()
	}
	return nil
}
