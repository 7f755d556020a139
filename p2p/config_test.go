package p2p

import (
	"errors"
	"testing"
)

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
