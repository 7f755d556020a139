package main

import (
	"errors"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/mempool"
	"github.com/cfindexd/cfindexd/metrics"
	"github.com/cfindexd/cfindexd/p2p"
)

// validateBloom checks the keys of BIP-37 serving: the p2p package decides
// what is valid (CheckBloomFPR, CheckBloomCPUShare), this names the key.
func (c *Config) validateBloom() error {
	var fprErr *p2p.BloomFPRError
	if err := p2p.CheckBloomFPR(c.BloomMinFPR, c.BloomMaxFPR); errors.As(err, &fprErr) {
		key := map[string]string{"MaxFPR": "bloommaxfpr", "MinFPR": "bloomminfpr"}[fprErr.Field]
		return fmt.Errorf("%s: %s", key, fprErr.Reason)
	}
	if p2p.CheckBloomCPUShare(bloomCPUShare(c.BloomCPU)) != nil {
		return fmt.Errorf("bloomcpu: %d%% is outside 1..100", c.BloomCPU)
	}
	if c.MempoolMirror < 0 || c.MempoolMirror > 65536 {
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
func newMempoolMirror(cfg Config, src mempool.Source, log zerolog.Logger) (*mempool.Mirror, error) {
	if !mirrorsMempool(cfg) {
		return nil, nil
	}
	return mempool.NewMirror(src, mempool.Config{
		MaxBytes:    int64(cfg.MempoolMirror) << 20,
		ZMQSequence: cfg.ZMQPubSequence,
		ZMQRawTx:    cfg.ZMQPubRawTx,
	}, log)
}

// bloomP2PConfig builds the P2P server's BIP-37 configuration.
func bloomP2PConfig(cfg Config, mirror *mempool.Mirror, metrics *metrics.Metrics) p2p.BloomConfig {
	bc := p2p.BloomConfig{
		Enabled:  cfg.PeerBloomFilters,
		MaxFPR:   cfg.BloomMaxFPR,
		MinFPR:   cfg.BloomMinFPR,
		CPUShare: bloomCPUShare(cfg.BloomCPU),
	}
	if mirror != nil {
		bc.Mempool = p2pMempool{mirror}
		metrics.WatchMempool(func() (int, int64) {
			s := mirror.Stats()
			return s.Transactions, s.Bytes
		})
	}
	return bc
}

// bloomCPUShare maps bloomcpu (percent) onto p2p.BloomConfig.CPUShare.
func bloomCPUShare(percent int) float64 { return float64(percent) / 100 }
