package main

import (
	"fmt"
	"math"

	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/bitcoind"
	"github.com/cfindexd/cfindexd/metrics"
	"github.com/cfindexd/cfindexd/p2p"
)

// validateBloom checks the keys of BIP-37 serving.
func (c *Config) validateBloom() error {
	switch {
	case !(c.BloomMaxFPR > 0 && c.BloomMaxFPR <= 1):
		return fmt.Errorf("bloommaxfpr: %v is outside (0, 1]", c.BloomMaxFPR)
	case !(c.BloomMinFPR >= 0 && c.BloomMinFPR < 1) || math.IsNaN(c.BloomMinFPR):
		return fmt.Errorf("bloomminfpr: %v is outside [0, 1)", c.BloomMinFPR)
	case c.BloomMinFPR > c.BloomMaxFPR:
		return fmt.Errorf("bloomminfpr: %v is above bloommaxfpr %v: no filter could pass", c.BloomMinFPR, c.BloomMaxFPR)
	case c.BloomCPU < 1 || c.BloomCPU > 100:
		return fmt.Errorf("bloomcpu: %d%% is outside 1..100", c.BloomCPU)
	case c.MempoolMirror < 0 || c.MempoolMirror > 65536:
		return fmt.Errorf("mempoolmirror: %d MiB is outside 0..65536", c.MempoolMirror)
	}
	for _, k := range []struct{ name, value string }{{"zmqpubrawtx", c.ZMQPubRawTx}, {"zmqpubsequence", c.ZMQPubSequence}} {
		if k.value == "" {
			continue
		}
		if err := validateZMQEndpoint(k.value); err != nil {
			return fmt.Errorf("%s: %w", k.name, err)
		}
	}
	if c.ZMQPubRawTx != "" && c.ZMQPubSequence == "" {
		return fmt.Errorf("zmqpubrawtx: set zmqpubsequence too (rawtx alone cannot tell mempool transactions from a block's)")
	}
	return nil
}

// mirrorsMempool reports whether the daemon mirrors the node's mempool:
// BIP-37 serving is on with a mempoolmirror budget.
func mirrorsMempool(cfg Config) bool {
	return cfg.PeerBloomFilters && cfg.MempoolMirror > 0
}

// newMempoolMirror returns the mirror of the node's mempool BIP-37 serving
// answers from, reading src (the node link, which gives the mirror a
// client of its own with one connection: its polls never wait behind
// peers' block fetches or the indexer), or nil when serving is off or
// mempoolmirror is 0.
func newMempoolMirror(cfg Config, src bitcoind.MempoolSource, log zerolog.Logger) (*bitcoind.MempoolMirror, error) {
	if !mirrorsMempool(cfg) {
		return nil, nil
	}
	return bitcoind.NewMempoolMirror(src, bitcoind.MempoolConfig{
		MaxBytes:    int64(cfg.MempoolMirror) << 20,
		ZMQSequence: cfg.ZMQPubSequence,
		ZMQRawTx:    cfg.ZMQPubRawTx,
	}, log)
}

// bloomP2PConfig builds the P2P server's BIP-37 configuration.
func bloomP2PConfig(cfg Config, mirror *bitcoind.MempoolMirror, metrics *metrics.Metrics) p2p.BloomConfig {
	bc := p2p.BloomConfig{
		Enabled:  cfg.PeerBloomFilters,
		MaxFPR:   cfg.BloomMaxFPR,
		MinFPR:   cfg.BloomMinFPR,
		CPUShare: float64(cfg.BloomCPU) / 100,
	}
	if mirror != nil {
		bc.Mempool = mirror
		metrics.WatchMempool(func() (int, int64) {
			s := mirror.Stats()
			return s.Transactions, s.Bytes
		})
	}
	return bc
}
