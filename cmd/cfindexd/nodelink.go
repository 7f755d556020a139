package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/httpapi"
	"github.com/cfindexd/cfindexd/internal/p2pclient"
	"github.com/cfindexd/cfindexd/mempool"
	"github.com/cfindexd/cfindexd/metrics"
	"github.com/cfindexd/cfindexd/netparams"
	"github.com/cfindexd/cfindexd/nodeclient"
	"github.com/cfindexd/cfindexd/p2p"
)

// rpcCandidate is one address where the node's JSON-RPC server may be.
type rpcCandidate struct {
	// Addr is host:port.
	Addr string
	// Label says where the port comes from, for the log: "rpcport",
	// "Bitcoin Core's regtest port", "btcd's regtest port".
	Label string
}

// rpcCandidates lists where to look for the node's JSON-RPC server: the
// configured rpcport, or with rpcport = 0 the chain's Bitcoin Core port,
// then btcd's (one entry where they are equal).
func rpcCandidates(cfg Config, nw netparams.Network) []rpcCandidate {
	if cfg.RPCPort != 0 {
		return []rpcCandidate{{Addr: net.JoinHostPort(cfg.RPCConnect, strconv.Itoa(cfg.RPCPort)), Label: "rpcport"}}
	}
	core := rpcCandidate{Addr: net.JoinHostPort(cfg.RPCConnect, strconv.Itoa(nw.RPCPort)), Label: "Bitcoin Core's " + nw.Name + " port"}
	btcd := rpcCandidate{Addr: net.JoinHostPort(cfg.RPCConnect, strconv.Itoa(nw.BtcdRPCPort)), Label: "btcd's " + nw.Name + " port"}
	switch {
	case nw.RPCPort == nw.BtcdRPCPort && nw.Name == "simnet":
		return []rpcCandidate{btcd}
	case nw.RPCPort == nw.BtcdRPCPort:
		core.Label = "Bitcoin Core's and btcd's " + nw.Name + " port"
		return []rpcCandidate{core}
	}
	return []rpcCandidate{core, btcd}
}

// nodeLink is the daemon's hold on its node, which may not answer yet: two
// RPC clients per candidate address (the indexer's, and a small one of its
// own for P2P peers, peerNodeClient), the candidate that answered last, and
// what the daemon knows about the node for /status. The P2P server relays
// blocks and transactions through it, so it can start before the node is
// reachable. Safe for concurrent use.
type nodeLink struct {
	candidates []rpcCandidate
	clients    []*nodeclient.Client
	// peerClients[i] serves P2P peers for candidates[i]: at most
	// maxblockfetches+1 connections, so peers never occupy the node's
	// RPC work queue ahead of the indexer.
	peerClients []*nodeclient.Client
	// mempoolClients[i] feeds the BIP-37 mempool mirror for candidates[i]
	// over one connection of its own; nil unless the mirror runs
	// (peerbloomfilters with a mempoolmirror budget).
	mempoolClients []*nodeclient.Client
	metrics        *metrics.Metrics

	mu      sync.Mutex
	current int // index of the candidate in use; -1 until one answered
	status  httpapi.NodeStatus
}

// newNodeLink makes the clients of every candidate; none is contacted.
// Every client, the peers' included, gets the same credentials and TLS
// settings (rpccert).
func newNodeLink(cfg Config, nw netparams.Network, metrics *metrics.Metrics, log zerolog.Logger) (*nodeLink, error) {
	l := &nodeLink{candidates: rpcCandidates(cfg, nw), metrics: metrics, current: -1}
	for _, cand := range l.candidates {
		nodeCfg := nodeclient.Config{
			Host:       cand.Addr,
			User:       cfg.RPCUser,
			Password:   cfg.RPCPassword,
			CookieFile: cfg.RPCCookieFile,
			RESTURL:    cfg.RESTURL,
			RPCCert:    cfg.RPCCert,
		}
		c, err := nodeclient.NewClient(nodeCfg, log.With().Str("component", "node").Logger())
		if err != nil {
			l.close()
			return nil, fmt.Errorf("node client: %w", err)
		}
		l.clients = append(l.clients, c)
		pc, err := peerNodeClient(nodeCfg, cfg, log)
		if err != nil {
			l.close()
			return nil, fmt.Errorf("node client for peers: %w", err)
		}
		l.peerClients = append(l.peerClients, pc)
		if mirrorsMempool(cfg) {
			mcfg := nodeCfg
			mcfg.MaxConns = 1
			mc, err := nodeclient.NewClient(mcfg, log.With().Str("component", "node-mempool").Logger())
			if err != nil {
				l.close()
				return nil, fmt.Errorf("node client for the mempool mirror: %w", err)
			}
			l.mempoolClients = append(l.mempoolClients, mc)
		}
	}
	l.status.Address = l.candidates[0].Addr
	return l, nil
}

// addresses is every candidate address, for log lines.
func (l *nodeLink) addresses() string {
	s := ""
	for i, c := range l.candidates {
		if i > 0 {
			s += " or "
		}
		s += c.Addr + " (" + c.Label + ")"
	}
	return s
}

// pick finds the candidate the node answers on: the first whose
// getblockhash 0 gets any answer but "unreachable" (a refusal of our
// credentials or TLS still says the node is there). It returns that
// client, its candidate and the genesis check's result, or nil and an
// error naming every candidate when none answered. A cookie that cannot
// be read sends no request at all; that error is returned as it is, with
// a hint when something listens on btcd's port (btcd has no cookie).
func (l *nodeLink) pick(ctx context.Context, genesis chainhash.Hash) (*nodeclient.Client, rpcCandidate, error) {
	var err error
	for i, c := range l.clients {
		err = c.CheckGenesis(ctx, genesis)
		if ctx.Err() != nil {
			return nil, rpcCandidate{}, ctx.Err()
		}
		if errors.Is(err, nodeclient.ErrNoCookie) {
			return nil, rpcCandidate{}, l.noCookie(ctx, c, genesis, err)
		}
		if !errors.Is(err, nodeclient.ErrUnreachable) {
			return c, l.candidates[i], err
		}
	}
	if len(l.clients) > 1 {
		err = fmt.Errorf("no node answers at %s: %w", l.addresses(), err)
	}
	return nil, rpcCandidate{}, err
}

// cookieGrace is how long a cookie may lag behind the node's RPC port:
// Bitcoin Core binds the port a moment before it writes the cookie.
const cookieGrace = 2 * time.Second

// noCookie explains a cookie c could not read. While nothing listens on
// the candidate addresses the node may still be starting and write it
// (a retry). When something does and the cookie is still missing
// cookieGrace later, the node is up and writes no cookie where cfindexd
// looks (btcd writes none at all): no retry can fix that.
func (l *nodeLink) noCookie(ctx context.Context, c *nodeclient.Client, genesis chainhash.Hash, err error) error {
	cand, ok := l.listening()
	if !ok {
		return err
	}
	t := time.NewTimer(cookieGrace)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	if again := c.CheckGenesis(ctx, genesis); !errors.Is(again, nodeclient.ErrNoCookie) {
		return err
	}
	if cand, ok = l.listening(); !ok {
		return err
	}
	return nodeclient.Permanent(fmt.Errorf("%w; but a node answers at %s (%s), so it writes no cookie there: btcd writes none, set rpcuser and rpcpassword; for Bitcoin Core set bitcoindatadir or rpccookiefile", err, cand.Addr, cand.Label))
}

// listening returns the first candidate on which something accepts TCP
// connections.
func (l *nodeLink) listening() (rpcCandidate, bool) {
	for _, cand := range l.candidates {
		if conn, err := net.DialTimeout("tcp", cand.Addr, time.Second); err == nil {
			conn.Close()
			return cand, true
		}
	}
	return rpcCandidate{}, false
}

// p2pProbeTimeout bounds p2pInsteadOfRPC's handshake.
const p2pProbeTimeout = 5 * time.Second

// p2pInsteadOfRPC turns err, no JSON-RPC server answering, into an error
// no retry can fix when a candidate address answers as a Bitcoin P2P node
// of params' network instead: rpcport set to the node's P2P port.
func (l *nodeLink) p2pInsteadOfRPC(ctx context.Context, params *chaincfg.Params, err error) error {
	for _, cand := range l.candidates {
		p, derr := p2pclient.Dial(ctx, cand.Addr, p2pclient.Options{Params: params, Timeout: p2pProbeTimeout})
		if derr == nil {
			p.Close()
			return nodeclient.Permanent(fmt.Errorf("%s (%s) is a Bitcoin P2P port, not a JSON-RPC server: set rpcport to the node's RPC port (Bitcoin Core's -rpcport, btcd's --rpclisten)", cand.Addr, cand.Label))
		}
	}
	return err
}

// use makes c, one of the candidates' clients, the one in use: the P2P
// server relays through that candidate's peers' client.
func (l *nodeLink) use(c *nodeclient.Client) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, ci := range l.clients {
		if ci == c {
			l.current = i
			l.status.Address = c.Host()
			return
		}
	}
}

// peerClient returns the peers' client of the candidate in use, nil
// before any candidate answered.
func (l *nodeLink) peerClient() *nodeclient.Client {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.current < 0 {
		return nil
	}
	return l.peerClients[l.current]
}

// mempoolClient returns the mempool mirror's client of the candidate in
// use, or errNodeNotConnected.
func (l *nodeLink) mempoolClient() (*nodeclient.Client, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.current < 0 || l.current >= len(l.mempoolClients) {
		return nil, errNodeNotConnected
	}
	return l.mempoolClients[l.current], nil
}

// GetRawMempool implements mempool.Source through the mirror's
// client of the candidate in use.
func (l *nodeLink) GetRawMempool(ctx context.Context, withSequence bool) (mempool.Snapshot, error) {
	c, err := l.mempoolClient()
	if err != nil {
		return mempool.Snapshot{}, err
	}
	snap, err := c.GetRawMempool(ctx, withSequence)
	return mempool.Snapshot(snap), err
}

// GetMempoolTransactions implements mempool.Source.
func (l *nodeLink) GetMempoolTransactions(ctx context.Context, txids []chainhash.Hash) ([][]byte, error) {
	c, err := l.mempoolClient()
	if err != nil {
		return nil, err
	}
	return c.GetMempoolTransactions(ctx, txids)
}

// GetRawBlock implements mempool.Source.
func (l *nodeLink) GetRawBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, error) {
	c, err := l.mempoolClient()
	if err != nil {
		return nil, err
	}
	return c.GetRawBlock(ctx, hash)
}

// up records a successful contact: the node's identity and prevout mode
// (empty strings keep what is known).
func (l *nodeLink) up(info nodeclient.NodeInfo, mode string) {
	l.mu.Lock()
	l.status.Reachable, l.status.Error = true, ""
	if info.Kind != nodeclient.NodeUnknown || info.Subversion != "" {
		l.status.Kind, l.status.Version = info.Kind.String(), info.Subversion
	}
	if mode != "" {
		l.status.PrevoutSource = mode
	}
	l.mu.Unlock()
	l.metrics.NodeReachable(nil)
}

// reachable records a successful probe without new facts.
func (l *nodeLink) reachable() {
	l.mu.Lock()
	l.status.Reachable, l.status.Error = true, ""
	l.mu.Unlock()
	l.metrics.NodeReachable(nil)
}

// down records a failed contact.
func (l *nodeLink) down(err error) {
	l.mu.Lock()
	l.status.Reachable, l.status.Error = false, err.Error()
	l.mu.Unlock()
	l.metrics.NodeReachable(err)
}

// nodeStatus is the node part of /status.
func (l *nodeLink) nodeStatus() httpapi.NodeStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.status
}

// errNodeNotConnected answers light clients' block and transaction
// requests before the node has answered once.
// It is also mempool.ErrNotReady: the mirror waits for the node quietly.
var errNodeNotConnected error = notConnectedError{}

type notConnectedError struct{}

func (notConnectedError) Error() string { return "the node has not answered yet" }

// Is makes the error match mempool.ErrNotReady.
func (notConnectedError) Is(target error) bool { return target == mempool.ErrNotReady }

// FetchBlock implements p2p.BlockFetcher through the peers' client of the
// candidate in use.
func (l *nodeLink) FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, error) {
	c := l.peerClient()
	if c == nil {
		return nil, errNodeNotConnected
	}
	return nodeBlocks{c}.FetchBlock(ctx, hash)
}

// RelayTransaction implements p2p.TxRelayer through the peers' client of
// the candidate in use.
func (l *nodeLink) RelayTransaction(ctx context.Context, raw []byte) (chainhash.Hash, error) {
	c := l.peerClient()
	if c == nil {
		return chainhash.Hash{}, errNodeNotConnected
	}
	return nodeBlocks{c}.RelayTransaction(ctx, raw)
}

// close releases every client's idle connections.
func (l *nodeLink) close() {
	for _, c := range l.clients {
		c.Close()
	}
	for _, c := range l.peerClients {
		c.Close()
	}
	for _, c := range l.mempoolClients {
		c.Close()
	}
}

var (
	_ p2p.BlockFetcher = (*nodeLink)(nil)
	_ p2p.TxRelayer    = (*nodeLink)(nil)

	_ mempool.Source = (*nodeLink)(nil)
)
