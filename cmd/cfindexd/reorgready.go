package main

import (
	"fmt"
	"strings"
	"time"
)

// maxReorgSettle bounds reorgsettle: longer would keep a node that
// invalidated blocks on purpose unfollowed for no good reason.
const maxReorgSettle = time.Hour

// autoReadyMaxTipAge is readymaxtipage = "auto" per chain. On main, test,
// testnet4 and signet a block comes every ten minutes on average: a tip two
// hours old means twelve missing blocks, which happens by chance about once
// in three years on mainnet (Poisson, e^-12 per block), so it almost
// always means the node stopped getting blocks. On regtest and simnet
// blocks come only when someone mines them: off.
var autoReadyMaxTipAge = map[string]time.Duration{
	"main":     2 * time.Hour,
	"test":     2 * time.Hour,
	"testnet4": 2 * time.Hour,
	"signet":   2 * time.Hour,
	"regtest":  0,
	"simnet":   0,
}

// readyMaxTipAge resolves readymaxtipage for chain: "auto", "0" (off) or a
// duration like 90m.
func readyMaxTipAge(raw, chain string) (time.Duration, error) {
	raw = strings.TrimSpace(raw)
	switch raw {
	case "auto":
		return autoReadyMaxTipAge[chain], nil
	case "0", "off":
		return 0, nil
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("readymaxtipage: %q is not auto, 0 or a duration like 2h or 90m", raw)
	}
	return d, nil
}

// reorgSettle turns the reorgsettle key into indexer.Config.ReorgSettle,
// whose zero means its default and negative means at once.
func reorgSettle(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// validateReorgReady checks the reorg and readiness keys.
func (c *Config) validateReorgReady() error {
	if c.ReorgSettle < 0 || c.ReorgSettle > maxReorgSettle {
		return fmt.Errorf("reorgsettle: %s is outside 0s..%s", c.ReorgSettle, maxReorgSettle)
	}
	if _, err := readyMaxTipAge(c.ReadyMaxTipAge, c.Chain); err != nil {
		return err
	}
	return nil
}
