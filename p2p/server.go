package p2p

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Server serves BIP-157 filters, headers and blocks to light clients. Build
// it with New and run it with Run (or Serve on a listener of your own).
type Server struct {
	cfg     Config
	env     *handlerEnv
	log     zerolog.Logger
	metrics Metrics
	bans    *banList
	nonce   uint64 // our version nonce

	mu        sync.Mutex
	conns     int                  // accepted connections, handshaking included
	perIP     map[netip.Prefix]int // accepted connections by address group (addrGroup)
	connected int                  // peers past the handshake
}

// New validates cfg and returns a server that is not yet listening.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	log := cfg.Log.With().Str("component", "p2p").Logger()
	env := &handlerEnv{
		view:       cfg.View,
		stopWait:   cfg.StopHashWait,
		filterWork: make(chan struct{}, cfg.MaxFilterWork),
		relayWait:  cfg.TxRelayTimeout,
		log:        log,
	}
	if cfg.Blocks != nil {
		env.blocks = newBlockCache(cfg.Blocks, cfg.BlockCacheBlocks)
	}
	if cfg.RelayTx {
		env.relay = cfg.Relay
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	return &Server{
		cfg:     cfg,
		env:     env,
		log:     log,
		metrics: cfg.Metrics,
		bans:    newBanList(),
		nonce:   binary.LittleEndian.Uint64(nonce[:]),
		perIP:   make(map[netip.Prefix]int),
	}, nil
}

// Run listens on Config.ListenAddr and serves until ctx ends; it returns
// nil then. An empty ListenAddr disables the server: Run returns nil at once.
func (s *Server) Run(ctx context.Context) error {
	if s.cfg.ListenAddr == "" {
		s.log.Info().Msg("P2P server disabled (no listen address)")
		return nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("p2p listen %s: %w", s.cfg.ListenAddr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve accepts peers on ln until ctx ends, then closes ln, disconnects
// every peer, waits for their goroutines and returns nil. Errors other than
// the end of ctx are returned.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.log.Info().Stringer("addr", ln.Addr()).Msg("serving light clients over P2P")
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
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
				s.log.Warn().Err(err).Dur("backoff", backoff).Msg("accept failed")
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
		ip, admitted := s.admit(conn)
		if !admitted {
			_ = conn.Close()
			s.metrics.PeerDisconnected("rejected")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.servePeer(ctx, conn, ip)
		}()
	}
}

// admit applies the ban list and the peer limits to a new connection.
func (s *Server) admit(conn net.Conn) (netip.Addr, bool) {
	ip := remoteIP(conn)
	if s.bans.Banned(ip, time.Now()) {
		s.log.Debug().Stringer("ip", ip).Msg("refused banned peer")
		return ip, false
	}
	g := addrGroup(ip)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns >= s.cfg.MaxPeers || s.perIP[g] >= s.cfg.MaxPeersPerIP {
		s.log.Debug().Stringer("ip", ip).Int("peers", s.conns).Int("from_ip", s.perIP[g]).Msg("refused peer over limit")
		return ip, false
	}
	s.conns++
	s.perIP[g]++
	return ip, true
}

// servePeer runs one admitted connection to its end.
func (s *Server) servePeer(ctx context.Context, conn net.Conn, ip netip.Addr) {
	defer func() {
		_ = conn.Close()
		s.mu.Lock()
		s.conns--
		g := addrGroup(ip)
		if s.perIP[g]--; s.perIP[g] == 0 {
			delete(s.perIP, g)
		}
		s.mu.Unlock()
	}()
	p := newPeer(s, conn, ip)
	err := p.run(ctx)
	cause := disconnectCause(err, ctx.Err() != nil)
	s.metrics.PeerDisconnected(cause)
	if cause == "misbehaving" {
		p.log.Debug().Err(err).Msg("disconnecting misbehaving peer")
		if s.cfg.BanDuration > 0 {
			s.bans.Ban(ip, s.cfg.BanDuration, time.Now())
		}
		return
	}
	p.log.Debug().Err(err).Str("cause", cause).Msg("peer disconnected")
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

// Banned reports whether ip is currently refused.
func (s *Server) Banned(ip netip.Addr) bool {
	return s.bans.Banned(ip, time.Now())
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
