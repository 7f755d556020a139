package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/metrics"
	"github.com/cfindexd/cfindexd/netparams"
	"github.com/cfindexd/cfindexd/nodeclient"
	"github.com/cfindexd/cfindexd/p2p"
	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
	"github.com/cfindexd/cfindexd/store"
)

// validateP2PDefences checks the P2P keys: package p2p decides each
// setting's range (p2p.Config.CheckLimits), this names the key and speaks
// its unit.
func (c *Config) validateP2PDefences() error {
	if _, err := peerpolicy.ParseWhitelist(c.Whitelist); err != nil {
		return fmt.Errorf("whitelist: %w", err)
	}
	err := p2pLimits(*c).CheckLimits()
	var le *p2p.LimitError
	if errors.As(err, &le) {
		key, unit, suffix := p2pKey(le.Field)
		show := func(v float64) string { return strconv.FormatFloat(v/unit, 'f', -1, 64) }
		if unit == 0 {
			show = func(v float64) string { return shortDuration(time.Duration(v)) }
		}
		return fmt.Errorf("%s: %s%s is outside %s..%s", key, show(le.Value), suffix, show(le.Limit.Min), show(le.Limit.Max))
	}
	return err
}

// p2pLimits maps the keys of the P2P limits onto p2p.Config in its units.
func p2pLimits(c Config) p2p.Config {
	return p2p.Config{
		MaxPeers:          c.MaxPeers,
		MaxPeersPerIP:     c.MaxPeersPerIP,
		MaxPeersPerSubnet: c.MaxPeersPerSubnet,
		SendBudget:        int64(c.SendBudget) << 20,
		PeerSendBudget:    c.PeerSendBudget << 10,
		RecvBudget:        int64(c.RecvBudget) << 20,
		SendStallTimeout:  c.PeerStallTimeout,
		MaxBlockFetches:   c.MaxBlockFetches,
		MaxUploadTarget:   int64(c.MaxUploadTarget) << 20,
		TxRelayRate:       float64(c.TxRelayRate),
	}
}

// p2pKey returns the key that sets a p2p.Config field of p2pLimits, the
// key's unit in the field's (0: both are durations) and the unit's name.
func p2pKey(field string) (key string, unit float64, suffix string) {
	switch field {
	case "SendBudget":
		return "sendbudget", 1 << 20, " MiB"
	case "PeerSendBudget":
		return "peersendbudget", 1 << 10, " KiB"
	case "RecvBudget":
		return "recvbudget", 1 << 20, " MiB"
	case "MaxUploadTarget":
		return "maxuploadtarget", 1 << 20, " MiB"
	case "SendStallTimeout":
		return "peerstalltimeout", 0, ""
	case "MaxPeers":
		return "maxpeers", 1, ""
	case "MaxPeersPerIP":
		return "maxpeersperip", 1, ""
	case "MaxPeersPerSubnet":
		return "maxpeerspersubnet", 1, ""
	case "MaxBlockFetches":
		return "maxblockfetches", 1, ""
	case "TxRelayRate":
		return "txrelayrate", 1, ""
	}
	return field, 1, ""
}

// shortDuration writes d as time.Duration does, without zero minutes and
// seconds after hours or minutes (1h, not 1h0m0s).
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
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
	pc := p2pLimits(cfg)
	pc.Params = nw.Params
	pc.View = newStoreView(st)
	if st != nil {
		pc.SilentPayments = newP2PSPView(spIndexOf(cfg, st))
	}
	pc.Blocks, pc.Relay, pc.RelayTx = blocks, relay, cfg.RelayTx
	pc.DisableV2 = !cfg.V2Transport
	pc.UserAgent = "/cfindexd:" + version + "/"
	pc.Whitelist = whitelist
	pc.IndexerBusy = indexerBusy(metrics, st, cfg.ReadyBlocks)
	pc.Log, pc.Metrics = log, metrics
	return pc, nil
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
