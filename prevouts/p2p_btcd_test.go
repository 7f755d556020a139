package prevouts

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/nodetest"
	"github.com/cfindexd/cfindexd/internal/tcptest"
	"github.com/cfindexd/cfindexd/nodeclient"
)

// btcdTestChain starts btcd with --txindex, builds a transaction-rich chain
// and returns a client and the hashes of heights 1..tip (btcd cannot
// serve genesis's coinbase).
func btcdTestChain(t *testing.T, ctx context.Context, rich int) (*btcdtest.Node, *nodeclient.Client, []chainhash.Hash) {
	t.Helper()
	n := btcdtest.Start(t, btcdtest.Options{TxIndex: true})
	if err := btcdtest.BuildTxRichChain(ctx, n, n.Wallet(), rich); err != nil {
		t.Fatal(err)
	}
	c, err := nodeclient.NewClient(nodeclient.Config{Host: n.RPCHost(), User: n.User(), Password: n.Password(), Timeout: 10 * time.Second}, nodetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ci, err := c.GetChainInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hashes := make([]chainhash.Hash, 0, ci.Blocks)
	for h := int64(1); h <= int64(ci.Blocks); h++ {
		hash, err := c.GetBlockHash(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, hash)
	}
	return n, c, hashes
}

// fetchAllRuns fetches hashes in runs of runLen and returns each block's
// serialization and spent scripts.
func fetchAllRuns(t *testing.T, ctx context.Context, src BlockSource, hashes []chainhash.Hash, runLen int) ([][]byte, [][][]byte) {
	t.Helper()
	raws := make([][]byte, 0, len(hashes))
	prevs := make([][][]byte, 0, len(hashes))
	for start := 0; start < len(hashes); start += runLen {
		end := min(start+runLen, len(hashes))
		got, err := src.(RunBlockSource).FetchBlocks(ctx, hashes[start:end], nil)
		if err != nil {
			t.Fatalf("run at height %d: %v", start+1, err)
		}
		for _, fb := range got {
			raws = append(raws, fb.Raw)
			prevs = append(prevs, fb.PrevScripts)
		}
	}
	return raws, prevs
}

// rpcRuns is the reference the P2P path is compared with: hashes fetched
// over JSON-RPC (txindex, no script cache) in runs of 16.
func rpcRuns(t *testing.T, ctx context.Context, c *nodeclient.Client, hashes []chainhash.Hash) ([][]byte, [][][]byte) {
	t.Helper()
	src, err := NewSource(c, ModeTxIndex, SourceOptions{ScriptCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	return fetchAllRuns(t, ctx, src, hashes, 16)
}

func compareRuns(t *testing.T, gotRaw, wantRaw [][]byte, gotPrev, wantPrev [][][]byte) {
	t.Helper()
	if len(gotRaw) != len(wantRaw) {
		t.Fatalf("%d blocks, want %d", len(gotRaw), len(wantRaw))
	}
	for i := range gotRaw {
		if !bytes.Equal(gotRaw[i], wantRaw[i]) || !nodetest.EqualScripts(gotPrev[i], wantPrev[i]) {
			t.Fatalf("height %d differs from the RPC path", i+1)
		}
	}
}

// Blocks fetched over btcd's P2P port, with witnesses, equal what getblock
// serves for a transaction-rich chain, with the same spent scripts, and the
// P2P path really served them.
func TestBtcdP2PBlocksEqualRPC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	n, c, hashes := btcdTestChain(t, ctx, 40)
	wantRaw, wantPrev := rpcRuns(t, ctx, c, hashes)

	for _, runLen := range []int{1, 16, 64} {
		src, err := NewSource(c, ModeTxIndex, SourceOptions{NodeP2P: n.P2PAddr(), P2PNet: n.Params().Net, P2PConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		ts := src.(*txIndexSource)
		gotRaw, gotPrev := fetchAllRuns(t, ctx, src, hashes, runLen)
		compareRuns(t, gotRaw, wantRaw, gotPrev, wantPrev)
		runs := int64((len(hashes) + runLen - 1) / runLen)
		if got := ts.p2p.Stats().Served; got != runs {
			t.Fatalf("run length %d: %d of %d runs served over P2P", runLen, got, runs)
		}
		if d := ts.p2p.Stats().Dials; d != 1 {
			t.Fatalf("run length %d: %d dials for sequential runs, want 1", runLen, d)
		}
		ts.Close()
	}
}

// An unknown block gets notfound from btcd: the run falls back to RPC,
// which reports ErrBlockNotFound as without P2P.
func TestBtcdP2PNotFoundFallsBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	n, c, hashes := btcdTestChain(t, ctx, 2)
	src, _ := NewSource(c, ModeTxIndex, SourceOptions{NodeP2P: n.P2PAddr(), P2PNet: n.Params().Net})
	defer src.(*txIndexSource).Close()
	_, err := src.(RunBlockSource).FetchBlocks(ctx, []chainhash.Hash{hashes[0], {3}}, nil)
	if !errors.Is(err, nodeclient.ErrBlockNotFound) {
		t.Fatalf("got %v, want nodeclient.ErrBlockNotFound from the RPC fallback", err)
	}
	// The connection that saw notfound is dropped; the next run works.
	if _, err := src.(RunBlockSource).FetchBlocks(ctx, hashes[:3], nil); err != nil {
		t.Fatal(err)
	}
	if src.(*txIndexSource).p2p.Stats().Served != 1 {
		t.Fatal("run after notfound not served over P2P")
	}
}

// A P2P address nobody listens on: every run goes over RPC, the daemon
// does not fail.
func TestP2PUnreachableUsesRPC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	_, c, hashes := btcdTestChain(t, ctx, 2)
	dead := tcptest.RefusedAddr(t)
	rpcSrc, _ := NewSource(c, ModeTxIndex, SourceOptions{})
	wantRaw, wantPrev := fetchAllRuns(t, ctx, rpcSrc, hashes, 16)
	src, _ := NewSource(c, ModeTxIndex, SourceOptions{NodeP2P: dead, P2PNet: 0x12141c16})
	gotRaw, gotPrev := fetchAllRuns(t, ctx, src, hashes, 16)
	compareRuns(t, gotRaw, wantRaw, gotPrev, wantPrev)
	p := src.(*txIndexSource).p2p
	if p.Stats().Served != 0 || p.Stats().Dials < 1 || !p.Stats().DialWarned {
		t.Fatalf("served %d, dials %d, warned %v; want nothing served and a warning", p.Stats().Served, p.Stats().Dials, p.Stats().DialWarned)
	}
}

// A connection killed in the middle of a run: the run is fetched again on a
// fresh connection (or over RPC), blocks stay identical, and later runs use
// P2P again.
func TestBtcdP2PKilledConnectionReconnects(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	n, c, hashes := btcdTestChain(t, ctx, 40)
	wantRaw, wantPrev := rpcRuns(t, ctx, c, hashes)

	// The proxy cuts its first connection after 20 kB from btcd, which
	// is inside the first run of blocks (the handshake is a few hundred
	// bytes).
	proxy := startCutProxy(t, n.P2PAddr(), 20_000)
	src, _ := NewSource(c, ModeTxIndex, SourceOptions{NodeP2P: proxy, P2PNet: n.Params().Net, P2PConns: 1})
	ts := src.(*txIndexSource)
	defer ts.Close()
	gotRaw, gotPrev := fetchAllRuns(t, ctx, src, hashes, 64)
	compareRuns(t, gotRaw, wantRaw, gotPrev, wantPrev)
	runs := int64((len(hashes) + 63) / 64)
	if ts.p2p.Stats().Dials != 2 || ts.p2p.Stats().Served != runs {
		t.Fatalf("dials %d served %d of %d runs; want a reconnect and every run over P2P", ts.p2p.Stats().Dials, ts.p2p.Stats().Served, runs)
	}
}

// startCutProxy forwards loopback connections to target; the first one is
// closed after cutAfter bytes from target. The listener and every
// connection close with the test.
func startCutProxy(t *testing.T, target string, cutAfter int64) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var first atomic.Bool
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) { mu.Lock(); conns = append(conns, c); mu.Unlock() }
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				in.Close()
				continue
			}
			track(in)
			track(out)
			limit := int64(1 << 62)
			if first.CompareAndSwap(false, true) {
				limit = cutAfter
			}
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(out, in)
				out.Close()
				in.Close()
			}()
			go func() {
				defer wg.Done()
				_, _ = io.CopyN(in, out, limit)
				in.Close()
				out.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String()
}

// Concurrent runs share a pool smaller than the number of fetchers, and a
// connection killed under one of them neither stalls the others nor
// changes a block.
func TestBtcdP2PConcurrentRunsSharePool(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	n, c, hashes := btcdTestChain(t, ctx, 40)
	wantRaw, wantPrev := rpcRuns(t, ctx, c, hashes)

	proxy := startCutProxy(t, n.P2PAddr(), 30_000)
	src, _ := NewSource(c, ModeTxIndex, SourceOptions{NodeP2P: proxy, P2PNet: n.Params().Net, P2PConns: 2})
	ts := src.(*txIndexSource)
	defer ts.Close()
	const fetchers, runLen = 6, 8
	gotRaw := make([][]byte, len(hashes))
	gotPrev := make([][][]byte, len(hashes))
	errs := make(chan error, fetchers)
	var wg sync.WaitGroup
	for w := range fetchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for start := w * runLen; start < len(hashes); start += fetchers * runLen {
				end := min(start+runLen, len(hashes))
				run, err := ts.FetchBlocks(ctx, hashes[start:end], nil)
				if err != nil {
					errs <- err
					return
				}
				for i, fb := range run {
					gotRaw[start+i], gotPrev[start+i] = fb.Raw, fb.PrevScripts
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	compareRuns(t, gotRaw, wantRaw, gotPrev, wantPrev)
	if ts.p2p.Stats().Served == 0 || ts.p2p.Stats().Dials < 2 {
		t.Fatalf("served %d runs, %d dials", ts.p2p.Stats().Served, ts.p2p.Stats().Dials)
	}
}

// A run of blocks larger than what a run may hold comes back in prefixes
// (over P2P, the rest of the getdata is not read and the connection is
// dropped; over JSON-RPC, the rest of the batch reply is not read), and
// fetching the remainder again gives exactly the blocks and spent scripts
// of uncapped runs.
func TestBtcdRunCapReturnsPrefixes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	n, c, hashes := btcdTestChain(t, ctx, 40)
	hashes = hashes[len(hashes)-40:] // the tx-rich blocks, a few kB each
	wantRaw, wantPrev := rpcRuns(t, ctx, c, hashes)
	for _, p2p := range []bool{true, false} {
		opts := SourceOptions{}
		if p2p {
			opts = SourceOptions{NodeP2P: n.P2PAddr(), P2PNet: n.Params().Net, P2PConns: 1}
		}
		src, err := NewSource(c, ModeTxIndex, opts)
		if err != nil {
			t.Fatal(err)
		}
		ts := src.(*txIndexSource)
		ts.runCap = 3 * len(wantRaw[0]) // about three blocks a run
		var gotRaw [][]byte
		var gotPrev [][][]byte
		calls, prefixes := 0, 0
		for start := 0; start < len(hashes); start += 16 {
			rest := hashes[start:min(start+16, len(hashes))]
			for len(rest) > 0 {
				got, err := ts.FetchBlocks(ctx, rest, nil)
				if err != nil {
					t.Fatal(err)
				}
				calls++
				if len(got) == 0 || len(got) > len(rest) {
					t.Fatalf("%d blocks for a run of %d", len(got), len(rest))
				}
				if len(got) < len(rest) {
					prefixes++
				}
				for _, fb := range got {
					gotRaw = append(gotRaw, fb.Raw)
					gotPrev = append(gotPrev, fb.PrevScripts)
				}
				rest = rest[len(got):]
			}
		}
		compareRuns(t, gotRaw, wantRaw, gotPrev, wantPrev)
		if prefixes == 0 || calls <= 3 {
			t.Errorf("P2P %v: %d calls, %d prefixes; want the cap to cut runs", p2p, calls, prefixes)
		}
		if p2p && ts.p2p.Stats().Served != int64(calls) {
			t.Errorf("%d of %d calls served over P2P", ts.p2p.Stats().Served, calls)
		}
		ts.Close()
	}
}
