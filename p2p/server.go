package p2p

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/semaphore"

	"github.com/cfindexd/cfindexd/p2p/bip37"
	"github.com/cfindexd/cfindexd/p2p/blockproxy"
	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
	"github.com/cfindexd/cfindexd/p2p/spfilter"
)

// Server serves BIP-157 filters, headers and blocks to light clients. Build
// it with New and run it with Serve on a listener.
type Server struct {
	cfg         Config
	env         *handlerEnv
	log         zerolog.Logger
	metrics     Metrics
	batch       BatchMetrics // metrics, if it counts messages in batches; else nil
	nonce       uint64       // our version nonce
	groupKey    [2]uint64
	whitelist   peerpolicy.Whitelist
	discouraged *peerpolicy.Discouragement
	sendPool    *peerpolicy.SendPool
	recvBudget  *semaphore.Weighted
	// clock is the filter work's and the send pool's service clock,
	// advanced while Serve runs.
	clock *peerpolicy.CoarseClock
	// handshakes gates v2 handshakes' curve steps; sealBudget bounds v2
	// messages being encrypted (link.go).
	handshakes       *peerpolicy.HandshakeGate
	sealBudget       *semaphore.Weighted
	transports       transportCounters
	transportMetrics TransportMetrics

	mu        sync.Mutex
	slots     map[uint64]*peerSlot // admitted connections, handshaking included
	nextID    uint64
	connected int // peers past the handshake
}

// New validates cfg and returns a server that is not yet listening.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	log := cfg.Log.With().Str("component", "p2p").Logger()
	clock := peerpolicy.NewCoarseClock()
	env := &handlerEnv{
		view:       cfg.View,
		net:        cfg.Params.Net,
		stopWait:   cfg.StopHashWait,
		filterWork: peerpolicy.NewTurnQueue(cfg.MaxFilterWork, filterWorkQuantum, filterWorkHalfLife, clock.Now),
		relayWait:  cfg.TxRelayTimeout,
		relayRate:  peerpolicy.NewSharedBucket(cfg.TxRelayRate, 10*cfg.TxRelayRate),
		metrics:    cfg.Metrics,
		log:        log,
		now:        cfg.Now,
	}
	env.chunks.size, env.headerFrames.size, env.hashLists.size = chunkCap, maxCFHeadersFrame, MaxGetCFilters
	if cfg.Blocks != nil {
		env.blocks = blockproxy.New(cfg.Blocks, blockproxy.NewGate(cfg.MaxBlockFetches, cfg.IndexerBusy),
			cfg.BlockCacheBytes, ProtocolVersion).WithRecency(blockproxy.RecentWithin(blockproxy.RecentBlocks, env.tip, env.activeHeight))
		env.upload = peerpolicy.NewUploadTarget(cfg.MaxUploadTarget)
	}
	if cfg.RelayTx {
		env.relay = cfg.Relay
	}
	if cfg.SilentPayments != nil {
		env.sp = spfilter.New(cfg.SilentPayments, cfg.Params.Net)
	}
	if cfg.Bloom.Enabled {
		bm, _ := cfg.Metrics.(bip37.Metrics)
		var decoded *blockproxy.DecodedCache
		if env.blocks != nil {
			decoded = blockproxy.NewDecodedCache(env.blocks, cfg.Bloom.FilteredBlockCacheBytes, clock.Now)
		}
		env.decoded = decoded
		env.bloom = bip37.New(cfg.Bloom, bip37.Env{Net: cfg.Params.Net, Blocks: decoded, Metrics: bm, Log: log, Now: cfg.Now, NotFound: ErrNotFound})
	}
	keys := randomUint64s(5)
	ttl := cfg.DiscourageDuration
	if ttl < 0 {
		ttl = 0
	}
	batch, _ := cfg.Metrics.(BatchMetrics)
	tm, ok := cfg.Metrics.(TransportMetrics)
	if !ok {
		tm = nopTransportMetrics{}
	}
	return &Server{
		cfg:         cfg,
		env:         env,
		log:         log,
		metrics:     cfg.Metrics,
		batch:       batch,
		nonce:       keys[0],
		groupKey:    [2]uint64{keys[1], keys[2]},
		whitelist:   peerpolicy.Whitelist(cfg.Whitelist),
		discouraged: peerpolicy.NewDiscouragement(cfg.MaxDiscouraged, ttl, keys[3], keys[4]),
		sendPool:    peerpolicy.NewSendPool(cfg.SendBudget, cfg.MaxPeers, cfg.PeerSendBudget, sendShareHalfLife, clock.Now),
		clock:       clock,
		recvBudget:  semaphore.NewWeighted(cfg.RecvBudget),
		slots:       make(map[uint64]*peerSlot),
		handshakes: peerpolicy.NewHandshakeGate(cfg.V2HandshakeSlots, cfg.V2HandshakeRate,
			4*cfg.V2HandshakeRate, cfg.Now),
		sealBudget:       semaphore.NewWeighted(v2SealBudget),
		transportMetrics: tm,
	}, nil
}

// serviceClockTick is how often the service clock advances: fine beside
// the half-lives of filter work and of the send pool.
const serviceClockTick = time.Millisecond

// randomUint64s returns n random values (keys, nonces).
func randomUint64s(n int) []uint64 {
	b := make([]byte, 8*n)
	_, _ = rand.Read(b)
	out := make([]uint64, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return out
}

// Serve accepts peers on ln until ctx ends, then closes ln, disconnects
// every peer, waits for their goroutines and returns nil. Errors other than
// the end of ctx are returned.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.log.Info().Stringer("addr", ln.Addr()).Int("max_peers", s.cfg.MaxPeers).Bool("bip37", s.cfg.Bloom.Enabled).
		Bool("v2", !s.cfg.DisableV2).
		Int64("memory_bound_mib", MemoryBound(s.cfg)>>20).Msg("serving light clients over P2P")
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	s.clock.Start(ctx, serviceClockTick)
	var backoff time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// Anything but a closed listener (EMFILE, ECONNABORTED, …) is
			// transient: back off and retry, as net/http does.
			if !errors.Is(err, net.ErrClosed) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn().Err(err).Stringer("backoff", backoff).Msg("accept failed")
				select {
				case <-time.After(backoff):
					continue
				case <-ctx.Done():
					return nil
				}
			}
			return fmt.Errorf("p2p accept: %w", err)
		}
		backoff = 0
		peerCtx, cancel := context.WithCancelCause(ctx)
		ip := remoteIP(conn)
		keys := randomUint64s(2)
		slot, reason := s.admitSafely(ip, newPeerState(keys[0], keys[1]), cancel)
		if slot == nil {
			cancel(nil)
			_ = conn.Close()
			s.log.Debug().Stringer("ip", ip).Str("reason", reason).Msg("refused peer")
			s.metrics.ConnectionRefused(reason)
			s.metrics.PeerDisconnected("rejected")
			continue
		}
		p := newPeer(s, conn, slot)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cancel(nil)
			s.servePeer(ctx, peerCtx, p)
		}()
	}
}

// admitSafely is admit with a recovered panic counted as a refusal: the
// accept loop must never die.
func (s *Server) admitSafely(ip netip.Addr, st *peerState, cancel context.CancelCauseFunc) (slot *peerSlot, reason string) {
	defer func() {
		if r := recover(); r != nil {
			s.metrics.PeerPanicked()
			s.log.Error().Str("panic", fmt.Sprint(r)).Msg("recovered a panic admitting a peer; refusing it")
			slot, reason = nil, "full"
		}
	}()
	return s.admit(ip, st, cancel)
}

// servePeer runs one admitted connection to its end: srvCtx is the server's
// lifetime, peerCtx the peer's (cancelled on eviction).
func (s *Server) servePeer(srvCtx, peerCtx context.Context, p *peer) {
	defer func() {
		_ = p.conn.Close()
		// The reserve before the slot: the peers holding reserves are never
		// more than the slots.
		p.budget.Close()
		s.release(p.slot)
	}()
	err := p.run(peerCtx)
	cause := disconnectCause(err, srvCtx.Err() != nil, context.Cause(peerCtx))
	s.metrics.PeerDisconnected(cause)
	switch cause {
	case "misbehaving":
		if !p.slot.whitelisted && s.cfg.DiscourageDuration > 0 {
			s.discouraged.Add(p.ip, s.cfg.Now())
			s.metrics.PeerDiscouraged()
			p.log.Debug().Err(err).Msg("disconnecting misbehaving peer; its address is discouraged")
			return
		}
		p.log.Debug().Err(err).Msg("disconnecting misbehaving peer")
	case "stalled":
		s.metrics.SendStalled()
		p.log.Debug().Err(err).Msg("disconnecting peer that does not read")
	default:
		p.log.Debug().Err(err).Str("cause", cause).Msg("peer disconnected")
	}
}

func (s *Server) peerUp() {
	s.mu.Lock()
	s.connected++
	n := s.connected
	s.mu.Unlock()
	s.metrics.PeersConnected(n)
}

func (s *Server) peerDown() {
	s.mu.Lock()
	s.connected--
	n := s.connected
	s.mu.Unlock()
	s.metrics.PeersConnected(n)
}

// PeerCount returns the number of peers past the handshake.
func (s *Server) PeerCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connected
}

// remoteIP returns the remote IP of conn (IPv4-mapped addresses unmapped).
func remoteIP(conn net.Conn) netip.Addr {
	if tcp, ok := conn.RemoteAddr().(*net.TCPAddr); ok {
		return tcp.AddrPort().Addr().Unmap()
	}
	ap, err := netip.ParseAddrPort(conn.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// disconnectCause classifies the end of a connection for metrics and logs
// (one of DisconnectCauses).
func disconnectCause(err error, shuttingDown bool, peerCause error) string {
	var ne net.Error
	switch {
	case errors.Is(err, ErrMisbehaving):
		return "misbehaving"
	case shuttingDown:
		return "shutdown"
	case errors.Is(peerCause, errEvicted):
		return "evicted"
	case errors.Is(err, errPanic):
		return "panic"
	case errors.Is(err, errSendStalled):
		return "stalled"
	case errors.Is(err, errUploadTarget):
		return "upload_target"
	case errors.Is(err, errInvalidRequest):
		return "invalid_request"
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "closed" // EOF, reset, a protocol-level disconnect without penalty
}
