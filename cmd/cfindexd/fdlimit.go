package main

import (
	"fmt"

	"github.com/cfindexd/cfindexd/nodep2p"
)

// File descriptors cfindexd needs besides P2P peers, HTTP connections and
// node connections: the store (its file, and the old one --reindex moves
// aside), the two listeners, stdio, the Go runtime's network poller, the
// ZMQ subscriptions (hashblock, sequence, rawtx), the blocks-dir source's
// open blk and rev files (16), and room for reads of /proc and the like.
// contrib/systemd/cfindexd.service's LimitNOFILE= is sized from the same
// sum (fdNeed).
const fdFixed = 64

// Node connections beside the ones keys set directly.
const (
	// fdIndexerPolls are the indexer client's connections besides its
	// fetches: the tip poll, block-hash look-ups, chain info.
	fdIndexerPolls = 4
	// fdCoreRPCThreads is Bitcoin Core's default -rpcthreads since v29,
	// which the getblock-3 source fills (one fewer) when rpcthreads is 0.
	fdCoreRPCThreads = 16
)

// fdNodeConns is the most connections cfindexd opens to its node under
// cfg: the indexer's JSON-RPC client (two requests per worker at once with
// the REST source, or the getblock-3 source's one fewer than rpcthreads,
// plus fdIndexerPolls), the P2P block source's (nodep2p.DefaultP2PConns),
// the peers' own client (maxblockfetches + 1, peerNodeClient) and the
// mempool mirror's one.
func fdNodeConns(cfg Config) int {
	threads := cfg.RPCThreads
	if threads == 0 {
		threads = fdCoreRPCThreads
	}
	n := max(2*cfg.Workers, threads) + fdIndexerPolls + nodep2p.DefaultP2PConns + cfg.MaxBlockFetches + 1
	if mirrorsMempool(cfg) {
		n++
	}
	return n
}

// fdNeed is the open file limit cfg needs: maxpeers (with listen on) +
// httpmaxconns (with httplisten on) + the node connections + fdFixed.
func fdNeed(cfg Config) (need, peers, conns, node int) {
	if cfg.Listen != "" {
		peers = cfg.MaxPeers
	}
	if cfg.HTTPListen != "" {
		conns = cfg.HTTPMaxConns
	}
	node = fdNodeConns(cfg)
	return peers + conns + node + fdFixed, peers, conns, node
}

// fdBudget checks that a limit of limit open files fits the configured
// caps (fdNeed). Running out of descriptors would fail the node and store
// connections rather than the clients that used them up, so a limit below
// that is refused at start.
func fdBudget(cfg Config, limit uint64) error {
	need, peers, conns, node := fdNeed(cfg)
	if limit < uint64(need) {
		return fmt.Errorf("open file limit %d is below the %d that maxpeers (%d) + httpmaxconns (%d) + %d node connections (workers, maxblockfetches, the mempool mirror) + %d for the store and the rest need: raise it (systemd LimitNOFILE=, ulimit -n) or lower the caps",
			limit, need, peers, conns, node, fdFixed)
	}
	return nil
}
