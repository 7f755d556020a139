package p2p

import (
	"testing"

	"github.com/btcsuite/btcd/chaincfg/v2"
)

// The documented bound with the defaults: about 200 MiB for 125 peers with
// blocks and relay on, and each budget moves it.
func TestMemoryBoundDefaults(t *testing.T) {
	cfg := Config{Params: &chaincfg.MainNetParams, View: newFakeView(1, 1), Blocks: &fakeNode{}, Relay: &fakeNode{}, RelayTx: true, MaxFilterWork: 4}
	got := MemoryBound(cfg) >> 20
	if got < 150 || got > 250 {
		t.Fatalf("default bound %d MiB, documented as about 200", got)
	}
	t.Logf("default P2P memory bound: %d MiB", got)
	more := cfg
	more.SendBudget = DefaultSendBudget + 10<<20
	if MemoryBound(more)-MemoryBound(cfg) != 10<<20 {
		t.Error("sendbudget does not move the bound byte for byte")
	}
	fewer := cfg
	fewer.MaxPeers = 25
	if MemoryBound(fewer) >= MemoryBound(cfg) {
		t.Error("fewer peers, no smaller bound")
	}
}
