package prevouts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/nodeclient"
)

// Bitcoin Core serves RPC with -rpcthreads threads (default 4; 16 since
// v29.0) and queues at most -rpcworkqueue requests (16; 64 since v29.0)
// before it answers HTTP 503. The getblock-3 source keeps one thread
// fewer than the node has busy with its requests, leaving one for every
// other client (and for cfindexd's own getblockhash batches), and so never
// fills the work queue.
const (
	coreRPCThreadsOld = 4
	coreRPCThreadsNew = 16
	coreRPCThreadsV   = 290000 // v29.0 raised the defaults
)

// DefaultRPCThreads is Bitcoin Core's default -rpcthreads for a node of
// version v (NodeInfo.Version; 0 when unknown, which gets the older,
// smaller default).
func DefaultRPCThreads(v int) int {
	if v >= coreRPCThreadsV {
		return coreRPCThreadsNew
	}
	return coreRPCThreadsOld
}

// verboseSource uses getblock <hash> 3 (Bitcoin Core >= 23): every vin
// carries its prevout, and every tx its raw hex. Replies are decoded as
// they stream in (decodeGetBlock3Reply), several at once: slots bounds
// the requests in flight across every caller.
type verboseSource struct {
	c     *nodeclient.Client
	slots chan struct{}
}

var (
	_ BlockSource    = (*verboseSource)(nil)
	_ RunBlockSource = (*verboseSource)(nil)
)

// newVerboseSource returns the source for a node serving RPC with
// rpcThreads threads.
func newVerboseSource(c *nodeclient.Client, rpcThreads int) *verboseSource {
	return &verboseSource{c: c, slots: make(chan struct{}, max(1, rpcThreads-1))}
}

// Mode implements BlockSource.
func (s *verboseSource) Mode() string { return ModeGetBlock3 }

// FetchBlock implements BlockSource.
func (s *verboseSource) FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, [][]byte, error) {
	fb, err := s.fetch(ctx, hash)
	if err != nil {
		return nil, nil, err
	}
	blk, err := nodeclient.DecodeBlock(fb.Raw, hash)
	if err != nil {
		return nil, nil, err
	}
	return blk, fb.PrevScripts, nil
}

// FetchBlocks implements RunBlockSource: one getblock 3 request per block,
// as many at once as the source's slots allow. The source has no cache to
// teach, so the turn ends at once.
func (s *verboseSource) FetchBlocks(ctx context.Context, hashes []chainhash.Hash, turn *RunTurn) ([]FetchedBlock, error) {
	turn.Done()
	out := make([]FetchedBlock, len(hashes))
	if len(hashes) == 1 {
		fb, err := s.fetch(ctx, hashes[0])
		out[0] = fb
		return out, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(hashes))
	for i, h := range hashes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out[i], errs[i] = s.fetch(ctx, h); errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	// The first real failure, rather than the cancellations it caused.
	var first error
	for _, err := range errs {
		if err != nil && (first == nil || errors.Is(first, context.Canceled) && !errors.Is(err, context.Canceled)) {
			first = err
		}
	}
	if first != nil {
		return nil, first
	}
	return out, nil
}

// fetch takes a slot and fetches one block.
func (s *verboseSource) fetch(ctx context.Context, hash chainhash.Hash) (FetchedBlock, error) {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return FetchedBlock{}, ctx.Err()
	}
	defer func() { <-s.slots }()
	var fb FetchedBlock
	err := s.c.CallStream(ctx, "getblock", []any{hash.String(), 3}, func(status int, r io.Reader) error {
		var err error
		fb, err = decodeGetBlock3Reply(r, status, hash)
		return err
	})
	if err != nil {
		return FetchedBlock{}, fmt.Errorf("fetch block %s via getblock 3: %w", hash, err)
	}
	return fb, nil
}
