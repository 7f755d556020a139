package p2p

import (
	"testing"

	"github.com/cfindexd/cfindexd/p2p/bip37"
)

// The documented bound with BIP-37 on: about 365 MiB with the defaults (v2 on),
// the decoded-block cache counted byte for byte.
func TestMemoryBoundWithBloom(t *testing.T) {
	cfg := Config{Params: testConfig(nil).Params, View: newFakeView(1, 1), Blocks: &fakeNode{}, Relay: &fakeNode{}, RelayTx: true, MaxFilterWork: 4}
	off := MemoryBound(cfg)
	cfg.Bloom.Enabled = true
	on := MemoryBound(cfg)
	if got := on >> 20; got < 345 || got > 385 {
		t.Fatalf("bound with BIP-37 %d MiB, documented as about 365", got)
	}
	more := cfg
	more.Bloom.FilteredBlockCacheBytes = bip37.DefaultFilteredBlockCacheBytes + 5<<20
	if MemoryBound(more)-on != 5<<20 {
		t.Error("the decoded-block cache does not move the bound byte for byte")
	}
	t.Logf("P2P memory bound: %d MiB, %d MiB with BIP-37", off>>20, on>>20)
}
