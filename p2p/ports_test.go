package p2p

import (
	"errors"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/v2"
)

func TestDefaultPortAvoidsNodePorts(t *testing.T) {
	nodePorts := map[uint16]bool{}
	for _, p := range []uint16{8332, 8333, 8334, 18332, 18333, 18334, 48332, 48333, 38332, 38333, 18443, 18444, 18555, 18556} {
		nodePorts[p] = true
	}
	for _, params := range []*chaincfg.Params{&chaincfg.MainNetParams, &chaincfg.TestNet3Params, &chaincfg.TestNet4Params, &chaincfg.SigNetParams, &chaincfg.RegressionNetParams, &chaincfg.SimNetParams} {
		var dp uint16
		_, _ = fmtSscan(params.DefaultPort, &dp)
		nodePorts[dp] = true
	}
	seen := map[uint16]string{}
	for _, chain := range []string{"main", "test", "testnet4", "signet", "regtest", "simnet"} {
		p, err := DefaultPort(chain)
		if err != nil {
			t.Fatalf("%s: %v", chain, err)
		}
		if nodePorts[p] {
			t.Errorf("%s: port %d collides with a bitcoind/btcd default", chain, p)
		}
		if other, dup := seen[p]; dup {
			t.Errorf("%s and %s share port %d", chain, other, p)
		}
		seen[p] = chain
	}
	if p, _ := DefaultPort("mainnet"); p != 8383 {
		t.Errorf("mainnet alias: %d", p)
	}
	if _, err := DefaultPort("litecoin"); !errors.Is(err, ErrUnknownChain) {
		t.Errorf("unknown chain: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	view := newFakeView(1, 1)
	ok := testConfig(view)
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		mod  func(*Config)
	}{
		{"no params", func(c *Config) { c.Params = nil }},
		{"no view", func(c *Config) { c.View = nil }},
		{"relay without relayer", func(c *Config) { c.RelayTx = true }},
		{"stop wait over 5s", func(c *Config) { c.StopHashWait = 6e9 }},
		{"ping not below idle", func(c *Config) { c.PingInterval, c.IdleTimeout = 2e9, 1e9 }},
		{"negative peers", func(c *Config) { c.MaxPeers = -1 }},
	}
	for _, tc := range tests {
		c := testConfig(view)
		tc.mod(&c)
		if err := c.Validate(); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
