package main

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btclog"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/indexer"
	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/lightclient"
	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/nodeclient"
	"github.com/cfindexd/cfindexd/p2p"
	"github.com/cfindexd/cfindexd/prevouts"
	"github.com/cfindexd/cfindexd/store"
)

// heightObserver records the node heights the follower reports.
type heightObserver struct {
	indexer.NopObserver
	mu      sync.Mutex
	heights map[int64]int
}

func (o *heightObserver) NodeTip(h int64, _ time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.heights[h]++
}

// polled reports whether the follower has asked the node at height h at
// least twice (the second time after the first round's decision).
func (o *heightObserver) polled(h int32) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.heights[int64(h)] >= 2
}

// TestNeutrinoKeepsPeerThroughReorgWindow: neutrino v0.18.0 whose only peer
// is a P2P server over the store of a follower that polls btcd every
// millisecond. btcd invalidates its top three blocks and the replacement
// branch is mined one block at a time, the follower polling the node in
// every intermediate state (three blocks gone and none back, a shorter
// branch, one as long). The store must keep the indexed chain through all
// of them, so neutrino never sees a tip with less work: it follows the
// reorg without warning and keeps its one connection.
func TestNeutrinoKeepsPeerThroughReorgWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("starts btcd and neutrino")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(5*time.Minute))
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{TxIndex: true})
	if _, err := node.Generate(ctx, 200); err != nil {
		t.Fatal(err)
	}
	log := zerolog.Nop()
	client, err := nodeclient.NewClient(nodeclient.Config{Host: node.RPCHost(), User: node.User(), Password: node.Password()}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	source, err := prevouts.DetectSource(ctx, client, log)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "cf.db"), *node.Params().GenesisHash, store.Options{Timeout: time.Second, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	obs := &heightObserver{heights: map[int64]int{}}
	f := indexer.NewFollower(indexer.Config{Genesis: *node.Params().GenesisHash, Workers: 2, PollInterval: time.Millisecond, ReorgSettle: time.Hour},
		client, source, st, nil, obs, log)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- f.Run(runCtx) }()

	srv, err := p2p.New(p2p.Config{Params: node.Params(), View: newStoreView(st), Blocks: nodeBlocks{client}, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(runCtx, ln) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("follower: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("p2p: %v", err)
		}
	}()

	nlog := lightclient.CaptureLog(btclog.LevelInfo)
	cs, err := lightclient.Start(ctx, t.TempDir(), node.Params(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	neutrinoAt := func(what string) {
		t.Helper()
		best, _, err := node.BestBlock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		testtime.WaitFor(t, "neutrino at "+what, time.Minute, func() bool {
			b, err := cs.BestBlock()
			if err != nil || b.Hash != best {
				return false
			}
			_, fh, err := cs.RegFilterHeaders.ChainTip()
			return err == nil && int32(fh) == b.Height
		})
	}
	neutrinoAt("the initial tip")

	_, height, err := node.BestBlock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	indexed, _ := st.Tip()
	first, err := node.BlockHash(ctx, height-2)
	if err != nil {
		t.Fatal(err)
	}
	if err := node.InvalidateBlock(ctx, first); err != nil {
		t.Fatal(err)
	}
	for i := int32(0); i <= 4; i++ {
		h := height - 3 + i
		testtime.WaitFor(t, "the follower polling the node at its height", time.Minute, func() bool { return obs.polled(h) })
		if tip, _ := st.Tip(); i <= 3 && tip != indexed {
			t.Fatalf("with %d replacement blocks the store moved to %d %s, off the indexed tip %d with more work", i, tip.Height, tip.Hash, indexed.Height)
		}
		if _, err := node.Generate(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	neutrinoAt("the replacement branch")
	if tip, _ := st.Tip(); tip.Height != uint32(height+2) {
		t.Fatalf("store at %d, want %d", tip.Height, height+2)
	}
	for _, w := range nlog.Warnings() {
		if strings.Contains(w, lessWorkDrop) {
			t.Errorf("neutrino was shown a tip with less work: %s", w)
		} else {
			t.Errorf("neutrino warned: %s", w)
		}
	}
	if n := cs.ConnectedCount(); n != 1 {
		t.Fatalf("neutrino has %d peers, want 1", n)
	}
}
