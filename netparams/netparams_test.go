package netparams

import (
	"errors"
	"strconv"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestDefaultPortsAvoidNodePorts checks that no cfindexd default port
// collides with a default P2P or RPC port of bitcoind or btcd on any
// network, nor with another network's cfindexd ports.
func TestDefaultPortsAvoidNodePorts(t *testing.T) {
	nodePorts := map[int]bool{}
	for _, p := range []int{8332, 8333, 8334, 18332, 18333, 18334, 48332, 48333, 38332, 38333, 18443, 18444, 18555, 18556} {
		nodePorts[p] = true
	}
	nets := All()
	for _, nw := range nets {
		p, err := strconv.Atoi(nw.Params.DefaultPort)
		if err != nil {
			t.Fatalf("%s: %v", nw.Name, err)
		}
		nodePorts[p] = true
		nodePorts[nw.RPCPort] = true
		nodePorts[nw.BtcdRPCPort] = true
	}
	seen := map[int]string{}
	for name, nw := range nets {
		for _, p := range []int{nw.P2PPort, nw.HTTPPort} {
			if nodePorts[p] {
				t.Errorf("%s: port %d collides with a bitcoind/btcd default", name, p)
			}
			if other, dup := seen[p]; dup {
				t.Errorf("%s and %s share port %d", name, other, p)
			}
			seen[p] = name
		}
	}
}

func TestLookup(t *testing.T) {
	for alias, want := range map[string]string{"mainnet": "main", " Testnet3 ": "test", "testnet": "test", "REGTEST": "regtest", "simnet": "simnet"} {
		nw, err := Lookup(alias)
		if err != nil || nw.Name != want {
			t.Errorf("%q: %q %v, want %q", alias, nw.Name, err, want)
		}
	}
	if nw, _ := Lookup("mainnet"); nw.P2PPort != 8383 || nw.NodeP2PPort != "8333" {
		t.Errorf("main: %+v", nw)
	}
	if _, err := Lookup("litecoin"); !errors.Is(err, ErrUnknownChain) {
		t.Errorf("unknown chain: %v", err)
	}
}

// Every network is found by its magic, no two share one, and a magic of
// no network is not found; labels name Core's datadir where it differs.
func TestByMagic(t *testing.T) {
	seen := map[wire.BitcoinNet]string{}
	for _, nw := range List() {
		if other, dup := seen[nw.Params.Net]; dup {
			t.Errorf("%s and %s share magic %v", nw.Name, other, nw.Params.Net)
		}
		seen[nw.Params.Net] = nw.Name
		if got, ok := ByMagic(nw.Params.Net); !ok || got.Name != nw.Name {
			t.Errorf("%s: ByMagic(%v) = %q, %v", nw.Name, nw.Params.Net, got.Name, ok)
		}
	}
	if len(seen) != len(All()) {
		t.Errorf("List has %d networks, All %d", len(seen), len(All()))
	}
	if nw, ok := ByMagic(0x12345678); ok {
		t.Errorf("unknown magic: %q", nw.Name)
	}
	want := map[string]string{"main": "main", "test": "test (testnet3)", "testnet4": "testnet4", "signet": "signet", "regtest": "regtest", "simnet": "simnet"}
	for name, nw := range All() {
		if got := nw.Label(); got != want[name] {
			t.Errorf("%s: label %q, want %q", name, got, want[name])
		}
	}
	if nw, _ := ByMagic(wire.TestNet); nw.Name != "regtest" {
		t.Errorf("wire.TestNet is regtest's magic, got %q", nw.Name)
	}
}

// TestSilentPaymentsStart: the index starts at taproot's activation on
// mainnet (the height chaincfg's deployment names too), never at genesis
// (no block 0 spends anything), and at 1 on the local networks.
func TestSilentPaymentsStart(t *testing.T) {
	for _, nw := range List() {
		if nw.SilentPaymentsStart == 0 {
			t.Errorf("%s: silent-payment index starts at genesis", nw.Name)
		}
	}
	main, _ := Lookup("main")
	if got, want := main.SilentPaymentsStart, main.Params.Deployments[chaincfg.DeploymentTaproot].MinActivationHeight; got != want {
		t.Errorf("main: start %d, taproot's minimum activation height %d", got, want)
	}
	for _, name := range []string{"regtest", "simnet", "signet", "testnet4"} {
		if nw, _ := Lookup(name); nw.SilentPaymentsStart != 1 {
			t.Errorf("%s: start %d, want 1", name, nw.SilentPaymentsStart)
		}
	}
}
