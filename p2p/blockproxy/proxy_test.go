package blockproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"
)

func TestBlockCacheSharesFetchAndSurvivesLeavingPeer(t *testing.T) {
	blk := testBlocks(1, 2, 24)[0]
	hash := blk.BlockHash()
	node := &slowNode{
		mapNode: newMapNode([]*wire.MsgBlock{blk}),
		started: make(chan struct{}, 4),
		release: make(chan struct{}),
	}
	cache := New(node, NewGate(2, nil), 1<<20, testPVer)
	leaverCtx, leave := context.WithCancel(context.Background())
	leaverDone := make(chan error, 1)
	go func() {
		_, err := cache.Get(leaverCtx, Requester{Peer: 1}, hash, true)
		leaverDone <- err
	}()
	<-node.started // the first peer's fetch is in flight
	stayerDone := make(chan error, 1)
	want := encodeBlock(t, blk, wire.WitnessEncoding)
	go func() {
		got, err := cache.Get(context.Background(), Requester{Peer: 2}, hash, true)
		if err == nil && !bytes.Equal(got.Payload, want) {
			err = fmt.Errorf("wrong block")
		}
		stayerDone <- err
	}()
	waitFor(t, "second caller joined the fetch", ioTimeout, func() bool {
		cache.mu.Lock()
		defer cache.mu.Unlock()
		f := cache.inflight[blockKey{hash, true}]
		return f != nil && f.waiters == 1
	})
	leave() // the first peer disconnects mid-fetch
	if err := <-leaverDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("leaver: %v", err)
	}
	<-node.started // the stayer fetches again
	close(node.release)
	if err := <-stayerDone; err != nil {
		t.Fatalf("stayer: %v", err)
	}
}
