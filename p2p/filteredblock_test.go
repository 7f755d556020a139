package p2p

import (
	"fmt"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"
)

// Many wallets asking for many blocks at once through a small decoded
// cache: every answer arrives (package blockproxy holds the cache to its
// bound).
func TestDecodedCacheUnderLoad(t *testing.T) {
	c := newBloomChain(t, 120, 30, 13)
	cfg := c.bloomConfig()
	cfg.Bloom.FilteredBlockCacheBytes = 256 << 10
	srv := startServer(t, cfg)
	done := make(chan error, 12)
	for i := range 12 {
		go func() {
			cl := dial(t, srv.addr)
			cl.handshake()
			cl.send(walletFilter(t, wire.BloomUpdateAll, c.keys[i][0]).MsgFilterLoad())
			gd := wire.NewMsgGetData()
			for h := range 100 {
				_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeFilteredBlock, hashPtr(c.blocks[(h+i*7)%120].BlockHash())))
			}
			cl.send(gd)
			n := 0
			for _, m := range cl.sync() {
				if _, ok := m.(*wire.MsgMerkleBlock); ok {
					n++
				}
			}
			if n != 100 {
				done <- fmt.Errorf("wallet %d: %d merkleblocks for 100 blocks", i, n)
				return
			}
			done <- nil
		}()
	}
	for range 12 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	c.node.mu.Lock()
	fetches := c.node.fetches
	c.node.mu.Unlock()
	t.Logf("%d node fetches for 1,200 filtered blocks of 120 distinct blocks", fetches)
}
