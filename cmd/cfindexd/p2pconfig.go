package main

import (
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/metrics"
	"github.com/cfindexd/cfindexd/netparams"
	"github.com/cfindexd/cfindexd/nodeclient"
	"github.com/cfindexd/cfindexd/p2p"
	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
	"github.com/cfindexd/cfindexd/store"
)

// validateP2PDefences checks the keys of the P2P defences block.
func (c *Config) validateP2PDefences() error {
	if c.MaxPeersPerSubnet < 1 || c.MaxPeersPerSubnet > 10000 {
		return fmt.Errorf("maxpeerspersubnet: %d is outside 1..10000", c.MaxPeersPerSubnet)
	}
	if _, err := peerpolicy.ParseWhitelist(c.Whitelist); err != nil {
		return fmt.Errorf("whitelist: %w", err)
	}
	if c.SendBudget < 1 || c.SendBudget > 65536 {
		return fmt.Errorf("sendbudget: %d MiB is outside 1..65536", c.SendBudget)
	}
	if c.PeerSendBudget < 16 || c.PeerSendBudget > 1<<20 {
		return fmt.Errorf("peersendbudget: %d KiB is outside 16..1048576", c.PeerSendBudget)
	}
	if c.RecvBudget < 1 || c.RecvBudget > 4096 {
		return fmt.Errorf("recvbudget: %d MiB is outside 1..4096", c.RecvBudget)
	}
	if c.PeerStallTimeout < time.Second || c.PeerStallTimeout > time.Hour {
		return fmt.Errorf("peerstalltimeout: %s is outside 1s..1h", c.PeerStallTimeout)
	}
	if c.MaxBlockFetches < 1 || c.MaxBlockFetches > 64 {
		return fmt.Errorf("maxblockfetches: %d is outside 1..64", c.MaxBlockFetches)
	}
	if c.MaxUploadTarget < 0 || c.MaxUploadTarget > 1<<24 {
		return fmt.Errorf("maxuploadtarget: %d MiB is outside 0..16777216", c.MaxUploadTarget)
	}
	if c.TxRelayRate < 1 || c.TxRelayRate > 10000 {
		return fmt.Errorf("txrelayrate: %d is outside 1..10000", c.TxRelayRate)
	}
	return nil
}

// peerNodeClient returns the node client that serves P2P peers (blocks for
// getdata, relayed transactions): a client of its own, with at most
// maxblockfetches+1 connections, so that peers' requests queue on it and
// never occupy the node's RPC work queue ahead of the indexer's calls.
func peerNodeClient(node nodeclient.Config, cfg Config, log zerolog.Logger) (*nodeclient.Client, error) {
	node.MaxConns = cfg.MaxBlockFetches + 1
	return nodeclient.NewClient(node, log.With().Str("component", "node-peers").Logger())
}

// peerNode is how P2P peers reach the node: blocks for getdata and relayed
// transactions. The daemon's nodeLink implements it over the peers' own
// client (peerNodeClient) of whichever node address answered.
type peerNode interface {
	p2p.BlockFetcher
	p2p.TxRelayer
}

// p2pConfig builds the P2P server's configuration from the daemon's; node
// may be nil (no block proxy, no relay).
func p2pConfig(cfg Config, nw netparams.Network, st *store.Store, metrics *metrics.Metrics, node peerNode, log zerolog.Logger) (p2p.Config, error) {
	whitelist, err := peerpolicy.ParseWhitelist(cfg.Whitelist)
	if err != nil {
		return p2p.Config{}, fmt.Errorf("whitelist: %w", err)
	}
	var (
		blocks p2p.BlockFetcher
		relay  p2p.TxRelayer
	)
	if node != nil {
		blocks, relay = node, node
	}
	return p2p.Config{
		Params:            nw.Params,
		View:              newStoreView(st),
		Blocks:            blocks,
		Relay:             relay,
		RelayTx:           cfg.RelayTx,
		UserAgent:         "/cfindexd:" + version + "/",
		MaxPeers:          cfg.MaxPeers,
		MaxPeersPerIP:     cfg.MaxPeersPerIP,
		MaxPeersPerSubnet: cfg.MaxPeersPerSubnet,
		Whitelist:         whitelist,
		SendBudget:        int64(cfg.SendBudget) << 20,
		PeerSendBudget:    cfg.PeerSendBudget << 10,
		RecvBudget:        int64(cfg.RecvBudget) << 20,
		SendStallTimeout:  cfg.PeerStallTimeout,
		MaxBlockFetches:   cfg.MaxBlockFetches,
		IndexerBusy:       indexerBusy(metrics, st, cfg.ReadyBlocks),
		MaxUploadTarget:   int64(cfg.MaxUploadTarget) << 20,
		TxRelayRate:       float64(cfg.TxRelayRate),
		Log:               log,
		Metrics:           metrics,
	}, nil
}

// indexerBusy reports whether the indexer is catching up: the node's tip
// (as last seen) more than lag blocks above the indexed tip, or not seen
// yet. Peers' block fetches then get one slot.
func indexerBusy(metrics *metrics.Metrics, st *store.Store, lag int) func() bool {
	return func() bool {
		node, ok := metrics.NodeHeight()
		if !ok {
			return true
		}
		indexed := int64(-1)
		if tip, ok := st.Tip(); ok {
			indexed = int64(tip.Height)
		}
		return node-indexed > int64(lag)
	}
}
