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
		{"too many peers", func(c *Config) { c.MaxPeers = 10001 }},
		{"tiny peer send budget", func(c *Config) { c.PeerSendBudget = 8 << 10 }},
		{"stall timeout under a second", func(c *Config) { c.SendStallTimeout = 10e6 }},
		{"relay rate under one", func(c *Config) { c.TxRelayRate = 0.5 }},
	}
	for _, tc := range tests {
		c := testConfig(view)
		tc.mod(&c)
		if err := c.Validate(); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// CheckLimits checks a Config as it is (a zero is not a default there)
// and names the field; Validate checks it with the defaults applied.
func TestConfigCheckLimits(t *testing.T) {
	var le *LimitError
	if err := (Config{}).CheckLimits(); !errors.As(err, &le) || le.Field != "MaxPeers" || le.Value != 0 || le.Limit.Min != 1 {
		t.Fatalf("zero Config: %v", err)
	}
	if err := (Config{}.withDefaults()).CheckLimits(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	c := Config{}.withDefaults()
	c.SendBudget = 64<<30 + 1
	if err := c.CheckLimits(); !errors.As(err, &le) || le.Field != "SendBudget" || !errors.Is(err, ErrBadConfig) {
		t.Fatalf("send budget over its limit: %v", err)
	}
}
