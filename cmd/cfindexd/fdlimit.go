package main

import "fmt"

// fdReserve is the file descriptors cfindexd needs besides P2P peers and
// HTTP connections: the store, the listeners, the node connections
// (JSON-RPC, REST, P2P block fetch, ZMQ), stdio and the Go runtime, with
// room to spare. contrib/systemd/cfindexd.service's LimitNOFILE= is sized
// from the same sum.
const fdReserve = 128

// fdBudget checks that a limit of limit open files fits the configured
// caps: maxpeers + httpmaxconns + fdReserve. Running out of descriptors
// would fail the node and store connections rather than the clients that
// used them up, so a limit below that is refused at start.
func fdBudget(cfg Config, limit uint64) error {
	peers, conns := 0, 0
	if cfg.Listen != "" {
		peers = cfg.MaxPeers
	}
	if cfg.HTTPListen != "" {
		conns = cfg.HTTPMaxConns
	}
	need := uint64(peers + conns + fdReserve)
	if limit < need {
		return fmt.Errorf("open file limit %d is below the %d that maxpeers (%d) + httpmaxconns (%d) + %d for the store and the node need: raise it (systemd LimitNOFILE=, ulimit -n) or lower the caps",
			limit, need, peers, conns, fdReserve)
	}
	return nil
}
