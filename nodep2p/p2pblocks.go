package nodep2p

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/p2pclient"
	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// DefaultP2PConns is the most connections the P2P block path keeps open to
// the node: one per concurrent run, so several indexer workers are served
// in parallel by the node's per-peer goroutines/threads.
const DefaultP2PConns = 4

// p2pRetryAfter is how long the P2P path rests after a failed dial before
// trying again; runs meanwhile go over RPC. p2pNotTheNodeRetryAfter is the
// rest after the address answered as something else than the node's P2P
// port (another network, another chain, not Bitcoin): that changes only
// when someone reconfigures it.
const (
	p2pRetryAfter           = 5 * time.Second
	p2pNotTheNodeRetryAfter = 10 * time.Minute
)

// Pool fetches runs of raw blocks over the node's own P2P port, as an
// ordinary outbound peer: one getdata of witness-block inventory vectors
// per run, blocks read back in request order. It is only a faster raw-block
// path: every failure makes the caller fetch that run over JSON-RPC, and
// the next run reconnects. Safe for concurrent use.
type Pool struct {
	addr string
	net  wire.BitcoinNet
	log  zerolog.Logger
	// guessed: addr was derived, not configured; failing to dial it is
	// expected on nodes that do not listen there and is logged at info.
	Guessed bool
	// identify names a block of the RPC node's chain that each new
	// connection must serve (dialP2P); nil skips the check.
	Identify IdentifyBlock
	// Transport is what each connection speaks: v1 (the zero value, the
	// node's own port on the same machine) or BIP-324 v2 with v1 fallback
	// (TransportAuto, a peer across a network).
	Transport p2pclient.Transport
	// Fallback says, for the log, what the caller does while the pool
	// cannot connect; empty: fetching over JSON-RPC.
	Fallback string

	idle chan *p2pConn // connections not in use
	// freed wakes a fetch waiting for a connection when another one is
	// dropped, so it can dial in its place.
	freed chan struct{}

	// served counts runs fetched over P2P, dials connections dialled
	// (Stats).
	served, dials atomic.Int64

	mu        sync.Mutex
	open      int // connections dialled and not closed (idle or in use)
	max       int
	downUntil time.Time // no dial before this after a failure
	warned    bool      // the dial failure warning was logged
	connected bool      // logged the first successful connection
	closed    bool
}

func NewPool(addr string, btcnet wire.BitcoinNet, conns int, log zerolog.Logger) *Pool {
	if conns <= 0 {
		conns = DefaultP2PConns
	}
	return &Pool{addr: addr, net: btcnet, log: log, idle: make(chan *p2pConn, conns), freed: make(chan struct{}, conns), max: conns}
}

// ErrUnavailable means no connection could be had for this run.
var ErrUnavailable = errors.New("p2p block path unavailable")

// get returns an idle connection or dials a new one.
func (p *Pool) get(ctx context.Context) (*p2pConn, error) {
	for {
		select {
		case c := <-p.idle:
			return c, nil
		default:
		}
		p.mu.Lock()
		if p.closed || time.Now().Before(p.downUntil) {
			p.mu.Unlock()
			return nil, ErrUnavailable
		}
		if p.open < p.max {
			p.open++
			p.mu.Unlock()
			p.dials.Add(1)
			c, err := dialP2P(ctx, p.addr, p.net, p.Transport, p.Identify)
			p.mu.Lock()
			if err != nil {
				p.open--
				if ctx.Err() == nil {
					p.downUntil = time.Now().Add(p2pRetryAfter)
					notTheNode := errors.Is(err, ErrNotTheNode)
					if notTheNode {
						p.downUntil = time.Now().Add(p2pNotTheNodeRetryAfter)
					}
					if !p.warned || notTheNode {
						p.warned = true
						ev := p.log.Warn()
						if p.Guessed {
							ev = p.log.Info()
						}
						fallback := p.Fallback
						if fallback == "" {
							fallback = "using JSON-RPC"
						}
						msg := "cannot fetch blocks over the node's P2P port; " + fallback + " and retrying every few seconds"
						if notTheNode {
							msg = "not fetching blocks over P2P from an address that is not the node's P2P port; " + fallback
						}
						ev.Err(err).Str("nodep2p", p.addr).Msg(msg)
					} else {
						p.log.Debug().Err(err).Str("nodep2p", p.addr).Msg("P2P block path still unavailable")
					}
				}
				p.mu.Unlock()
				p.signalFreed()
				return nil, err
			}
			if !p.connected {
				p.connected = true
				p.log.Info().Str("nodep2p", p.addr).Msg("fetching blocks over the node's P2P port")
			}
			p.mu.Unlock()
			return c, nil
		}
		p.mu.Unlock()
		// Every connection is busy: wait for one rather than dial more,
		// or for one to be dropped and dial in its place.
		select {
		case c := <-p.idle:
			return c, nil
		case <-p.freed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// put returns a healthy connection to the pool.
func (p *Pool) put(c *p2pConn) {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if !closed {
		select {
		case p.idle <- c:
			return
		default:
		}
	}
	p.drop(c)
}

// drop closes a connection that failed or is not wanted.
func (p *Pool) drop(c *p2pConn) {
	c.close()
	p.mu.Lock()
	p.open--
	p.mu.Unlock()
	p.signalFreed()
}

// signalFreed wakes one fetch waiting for a connection slot.
func (p *Pool) signalFreed() {
	select {
	case p.freed <- struct{}{}:
	default:
	}
}

// fetch returns the blocks with the given hashes, in order, fetched over
// P2P; with maxBytes > 0 it stops reading once it holds that many bytes of
// blocks and returns those (at least one), dropping the connection, whose
// other blocks are still on their way. A connection that fails once is
// dropped and the run is retried on a fresh one; a second failure is
// returned and the caller uses RPC.
func (p *Pool) Fetch(ctx context.Context, hashes []chainhash.Hash, maxBytes int) ([]*wirescan.ScannedBlock, error) {
	var lastErr error
	for attempt := 0; attempt < 2; attempt++ {
		c, err := p.get(ctx)
		if err != nil {
			return nil, err
		}
		raws, err := c.fetchBlocks(ctx, hashes, maxBytes)
		if err == nil {
			if len(raws) < len(hashes) {
				p.drop(c)
			} else {
				p.put(c)
			}
			p.served.Add(1)
			return raws, nil
		}
		p.drop(c)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		lastErr = err
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrMalformed) {
			break
		}
	}
	return nil, lastErr
}

// PoolStats is what a Pool has done so far.
type PoolStats struct {
	// Served counts the runs fetched over P2P; Dials the connections
	// dialled.
	Served, Dials int64
	// DialWarned says a failure to dial was logged as a warning.
	DialWarned bool
}

// Stats reports what p has done so far.
func (p *Pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PoolStats{Served: p.served.Load(), Dials: p.dials.Load(), DialWarned: p.warned}
}

// Close closes every idle connection and stops new ones being dialled.
// Connections in use are closed when their fetch returns them.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	for {
		select {
		case c := <-p.idle:
			p.drop(c)
		default:
			return nil
		}
	}
}
