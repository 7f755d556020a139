package prevouts_test

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/indexer"
	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/nodeclient"
	"github.com/cfindexd/cfindexd/prevouts"
	"github.com/cfindexd/cfindexd/store"
)

// The indexer's catch-up from btcd with raw blocks over P2P — through a
// proxy that kills the first connection in the middle of a run — stores
// exactly btcd's own filters and filter headers, and most runs did go over
// P2P.
func TestBtcdIndexerCatchUpOverP2P(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Second)
	defer cancel()
	n := btcdtest.Start(t, btcdtest.Options{TxIndex: true})
	if err := btcdtest.BuildTxRichChain(ctx, n, n.Wallet(), 150); err != nil {
		t.Fatal(err)
	}
	c, err := nodeclient.NewClient(nodeclient.Config{Host: n.RPCHost(), User: n.User(), Password: n.Password(), Timeout: 10 * time.Second}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tipHash, err := c.GetBestBlockHash(ctx)
	if err != nil {
		t.Fatal(err)
	}
	proxy := prevouts.StartCutProxy(t, n.P2PAddr(), 100_000)
	src, err := prevouts.DetectSource(ctx, c, zerolog.Nop(), prevouts.SourceOptions{NodeP2P: proxy, P2PNet: n.Params().Net})
	if err != nil {
		t.Fatal(err)
	}
	defer src.(io.Closer).Close()
	if src.Mode() != prevouts.ModeTxIndex {
		t.Fatalf("mode %s", src.Mode())
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "s.db"), *n.Params().GenesisHash, store.Options{Timeout: time.Second, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f := indexer.NewFollower(indexer.Config{Genesis: *n.Params().GenesisHash, Workers: 4, BatchBlocks: 100, PollInterval: 100 * time.Millisecond},
		c, src, st, nil, nil, zerolog.Nop())
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Run(runCtx) }()
	for {
		changed := st.TipChanged()
		if tip, ok := st.Tip(); ok && tip.Hash == tipHash {
			break
		}
		select {
		case <-changed:
		case err := <-done:
			t.Fatalf("follower stopped: %v", err)
		case <-ctx.Done():
			t.Fatal("store did not reach the tip")
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("follower: %v", err)
	}
	if err := n.CompareStore(ctx, st, 0); err != nil {
		t.Fatal(err)
	}
	served, dials := prevouts.P2PStats(src)
	if served < 5 || dials < 2 {
		t.Fatalf("%d runs over P2P with %d dials; want P2P used and a reconnect after the cut", served, dials)
	}
	t.Logf("%d runs over P2P, %d dials", served, dials)
}
