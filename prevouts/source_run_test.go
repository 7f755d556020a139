package prevouts

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/corefixture"
	"github.com/cfindexd/cfindexd/nodeclient"
)

// The txindex source fetching the recorded active chain in runs of several
// lengths, each with a cold cache, yields exactly what FetchBlock yields
// per block (the recorded bytes and spent scripts), with one getblock
// batch per run and at most one getrawtransaction batch per run.
func TestFetchBlocksEqualsFetchBlock(t *testing.T) {
	fx := corefixture.Load(t)
	chain := fx.ActiveChain()
	want := make(map[chainhash.Hash][][]byte, len(chain))
	for _, b := range chain {
		want[b.Hash] = expectedPrevScripts(t, b)
	}
	for _, runLen := range []int{1, 2, 7, 16, len(chain)} {
		c, srv := newFixtureClient(t, fx, corefixture.Options{})
		src, err := NewSource(c, ModeTxIndex, SourceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		runner := src.(RunBlockSource)
		runs := 0
		for start := 1; start < len(chain); start += runLen { // genesis's coinbase is not served
			end := min(start+runLen, len(chain))
			hashes := make([]chainhash.Hash, 0, end-start)
			for _, b := range chain[start:end] {
				hashes = append(hashes, b.Hash)
			}
			got, err := runner.FetchBlocks(testCtx(t), hashes, nil)
			if err != nil {
				t.Fatalf("run %d of %d: %v", start, runLen, err)
			}
			runs++
			for i, fb := range got {
				b := chain[start+i]
				if diff := fetchedMatches(fb, b.Raw); diff != "" {
					t.Errorf("run length %d, %s: %s", runLen, b.Name(), diff)
				}
				if !equalScripts(fb.PrevScripts, want[b.Hash]) {
					t.Errorf("run length %d, %s: prevScripts differ", runLen, b.Name())
				}
			}
		}
		if runLen > 1 {
			if got := srv.Calls("getblock"); got != len(chain)-1 {
				t.Errorf("run length %d: %d getblock calls for %d blocks", runLen, got, len(chain)-1)
			}
			if got := srv.Batches(); got > 2*runs {
				t.Errorf("run length %d: %d batches for %d runs", runLen, got, runs)
			}
		}
	}
}

// Spends of outputs created earlier in the same run never reach the node,
// even with the cache off: the run resolves them itself.
func TestFetchBlocksResolvesInRunSpends(t *testing.T) {
	fx := corefixture.Load(t)
	chain := fx.ActiveChain()
	c, srv := newFixtureClient(t, fx, corefixture.Options{})
	src, err := NewSource(c, ModeTxIndex, SourceOptions{ScriptCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	hashes := make([]chainhash.Hash, 0, len(chain)-1)
	for _, b := range chain[1:] {
		hashes = append(hashes, b.Hash)
	}
	if _, err := src.(RunBlockSource).FetchBlocks(testCtx(t), hashes, nil); err != nil {
		t.Fatal(err)
	}
	// Everything the chain spends was created in the chain after genesis,
	// so the whole chain as one run needs no getrawtransaction at all.
	if got := srv.Calls("getrawtransaction"); got != 0 {
		t.Errorf("%d getrawtransaction calls for a run holding every spent output", got)
	}
	if got := srv.Batches(); got != 1 {
		t.Errorf("%d batches, want 1", got)
	}
}

// Runs fetched at the same time by several workers, in turns of one
// RunOrder, learn each other's outputs in chain order: a catch-up from
// genesis never asks the node for a transaction, however the fetches
// interleave, and every run's spent scripts are right.
func TestConcurrentRunsInTurnsNeedNoGetRawTransaction(t *testing.T) {
	// Capped, every call returns one block of the run and keeps the turn
	// for the rest, so the order holds as well.
	for _, capped := range []bool{false, true} {
		t.Run(fmt.Sprintf("capped=%v", capped), func(t *testing.T) {
			testConcurrentRunsInTurns(t, capped)
		})
	}
}

func testConcurrentRunsInTurns(t *testing.T, capped bool) {
	fx := corefixture.Load(t)
	chain := fx.ActiveChain()
	c, srv := newFixtureClient(t, fx, corefixture.Options{})
	src, err := NewSource(c, ModeTxIndex, SourceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if capped {
		ts := src.(*txIndexSource)
		ts.runCap = 1
		ts.blockSize.Store(1 << 20) // as if blocks had just grown large
	}
	const runLen, workers = 3, 6
	type job struct {
		blocks []*corefixture.Block
		turn   *RunTurn
	}
	jobs := make(chan job, len(chain))
	errs := make(chan error, workers)
	var calls atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				hashes := make([]chainhash.Hash, len(j.blocks))
				for i, b := range j.blocks {
					hashes[i] = b.Hash
				}
				for blocks := j.blocks; len(hashes) > 0; {
					got, err := src.(RunBlockSource).FetchBlocks(testCtx(t), hashes, j.turn)
					if err != nil {
						errs <- err
						return
					}
					calls.Add(1)
					if len(got) == 0 || capped && len(got) != 1 {
						errs <- fmt.Errorf("%d blocks for a run of %d", len(got), len(hashes))
						return
					}
					for i, fb := range got {
						if !equalScripts(fb.PrevScripts, expectedPrevScripts(t, blocks[i])) {
							errs <- fmt.Errorf("%s: prevScripts differ", blocks[i].Name())
							return
						}
					}
					hashes, blocks = hashes[len(got):], blocks[len(got):]
				}
			}
		}()
	}
	order := NewRunOrder()
	for start := 1; start < len(chain); start += runLen {
		jobs <- job{blocks: chain[start:min(start+runLen, len(chain))], turn: order.Next()}
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if capped && calls.Load() != int64(len(chain)-1) {
		t.Errorf("%d calls for %d blocks, want one each", calls.Load(), len(chain)-1)
	}
	if got := srv.Calls("getrawtransaction"); got != 0 {
		t.Errorf("%d getrawtransaction calls for a catch-up from genesis in turns", got)
	}
	spends := 0
	for _, b := range chain[1:] {
		spends += len(expectedPrevScripts(t, b))
	}
	fromCache, fromNode := src.(*txIndexSource).PrevoutCounts()
	if fromCache != uint64(spends) || fromNode != 0 || spends == 0 {
		t.Errorf("prevout counts: %d from cache, %d from the node; the chain spends %d", fromCache, fromNode, spends)
	}
}

// An unknown block in a run fails the run with the block's sentinel.
func TestFetchBlocksUnknownBlock(t *testing.T) {
	fx := corefixture.Load(t)
	c, _ := newFixtureClient(t, fx, corefixture.Options{})
	src, _ := NewSource(c, ModeTxIndex, SourceOptions{})
	h101, _ := fx.ActiveHash(101)
	_, err := src.(RunBlockSource).FetchBlocks(testCtx(t), []chainhash.Hash{h101, {1}}, nil)
	if !errors.Is(err, nodeclient.ErrBlockNotFound) {
		t.Fatalf("got %v, want nodeclient.ErrBlockNotFound", err)
	}
}

// Against a real btcd: every run length gives the same blocks and spent
// scripts as FetchBlock per block with a cold cache, runs straddling the
// empty maturity blocks and the transaction-rich ones alike.
func TestBtcdFetchBlocksEqualsFetchBlock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	n := btcdtest.Start(t, btcdtest.Options{TxIndex: true})
	if err := btcdtest.BuildTxRichChain(ctx, n, n.Wallet(), 40); err != nil {
		t.Fatal(err)
	}
	c, err := nodeclient.NewClient(nodeclient.Config{Host: n.RPCHost(), User: n.User(), Password: n.Password(), Timeout: 10 * time.Second}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ci, err := c.GetChainInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hashes := make([]chainhash.Hash, 0, ci.Blocks)
	for h := int64(1); h <= int64(ci.Blocks); h++ { // btcd cannot serve genesis's coinbase
		hash, err := c.GetBlockHash(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, hash)
	}
	perBlock, _ := NewSource(c, ModeTxIndex, SourceOptions{ScriptCacheBytes: -1})
	type want struct {
		raw  []byte
		prev [][]byte
	}
	wants := make([]want, len(hashes))
	spends := 0
	for i, h := range hashes {
		blk, prev, err := perBlock.FetchBlock(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		wants[i] = want{serializeBlock(t, blk), prev}
		spends += len(prev)
	}
	if spends < 100 {
		t.Fatalf("only %d spends in the chain", spends)
	}
	for _, runLen := range []int{3, 16, 64} {
		src, _ := NewSource(c, ModeTxIndex, SourceOptions{BatchSize: 7})
		for start := 0; start < len(hashes); start += runLen {
			end := min(start+runLen, len(hashes))
			got, err := src.(RunBlockSource).FetchBlocks(ctx, hashes[start:end], nil)
			if err != nil {
				t.Fatalf("run length %d at %d: %v", runLen, start+1, err)
			}
			for i, fb := range got {
				w := wants[start+i]
				if diff := fetchedMatches(fb, w.raw); diff != "" || !equalScripts(fb.PrevScripts, w.prev) {
					t.Fatalf("run length %d, height %d: differs from FetchBlock: %s", runLen, start+i+1, diff)
				}
			}
		}
	}
}
