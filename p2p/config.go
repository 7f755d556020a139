package p2p

import (
	"fmt"
	"runtime"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/rs/zerolog"
)

// Defaults for Config fields left zero.
const (
	DefaultMaxPeers         = 125
	DefaultMaxPeersPerIP    = 8
	DefaultHandshakeTimeout = 30 * time.Second
	DefaultIdleTimeout      = 20 * time.Minute // Core's TIMEOUT_INTERVAL
	DefaultPingInterval     = 2 * time.Minute  // Core's PING_INTERVAL
	DefaultWriteTimeout     = 2 * time.Minute
	DefaultStopHashWait     = 5 * time.Second
	DefaultBanDuration      = time.Hour
	DefaultPeerSendBudget   = 8 << 20
	DefaultBlockCacheBlocks = 16
	DefaultTxRelayTimeout   = 30 * time.Second

	// MaxStopHashWait bounds Config.StopHashWait: a peer's reader is parked
	// for that long, so it must stay short.
	MaxStopHashWait = 5 * time.Second
)

// Config configures a Server. Zero values take the defaults above.
type Config struct {
	// ListenAddr is the host:port Run listens on; empty disables the server
	// (Run returns nil at once). DefaultPort gives the port per chain.
	ListenAddr string
	// Params selects the network: message magic, genesis.
	Params *chaincfg.Params
	// View is the committed filter store. Required.
	View ChainView
	// Blocks fetches raw blocks for getdata; nil answers every block
	// request with notfound.
	Blocks BlockFetcher
	// Relay sends wallets' transactions to the node. Transactions are
	// accepted only when RelayTx is true and Relay is set.
	Relay   TxRelayer
	RelayTx bool

	// UserAgent is this server's BIP-14 user agent, e.g. "/cfindexd:0.1.0/".
	UserAgent string

	// MaxPeers bounds connected peers (handshaking included); MaxPeersPerIP
	// bounds them per remote IPv4 address or IPv6 /64 (addrGroup).
	MaxPeers      int
	MaxPeersPerIP int

	// HandshakeTimeout bounds version..verack; IdleTimeout disconnects a
	// peer that sent nothing (pongs included) for that long; PingInterval is
	// how often the server pings; WriteTimeout bounds one socket write.
	HandshakeTimeout time.Duration
	IdleTimeout      time.Duration
	PingInterval     time.Duration
	WriteTimeout     time.Duration

	// StopHashWait is how long a filter request whose stop hash is not yet
	// committed waits for TipChanged before being ignored (≤ MaxStopHashWait).
	StopHashWait time.Duration

	// BanDuration is how long a misbehaving peer's IP is refused; negative
	// disables bans (the peer is still disconnected).
	BanDuration time.Duration

	// PeerSendBudget bounds the bytes queued for one peer and not yet
	// written; a handler producing more waits, and the peer's next request
	// is not read meanwhile.
	PeerSendBudget int
	// MaxFilterWork bounds filter-store reads in progress across all peers
	// (default 2×GOMAXPROCS).
	MaxFilterWork int
	// BlockCacheBlocks is the size of the LRU cache of raw blocks served.
	BlockCacheBlocks int
	// TxRelayTimeout bounds one TxRelayer call.
	TxRelayTimeout time.Duration

	// Log receives the server's log lines; misbehaving peers log at debug.
	Log zerolog.Logger
	// Metrics receives counters; nil means NopMetrics.
	Metrics Metrics
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	setInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	setDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	setInt(&c.MaxPeers, DefaultMaxPeers)
	setInt(&c.MaxPeersPerIP, DefaultMaxPeersPerIP)
	setInt(&c.PeerSendBudget, DefaultPeerSendBudget)
	setInt(&c.MaxFilterWork, 2*runtime.GOMAXPROCS(0))
	setInt(&c.BlockCacheBlocks, DefaultBlockCacheBlocks)
	setDur(&c.HandshakeTimeout, DefaultHandshakeTimeout)
	setDur(&c.IdleTimeout, DefaultIdleTimeout)
	setDur(&c.PingInterval, DefaultPingInterval)
	setDur(&c.WriteTimeout, DefaultWriteTimeout)
	setDur(&c.StopHashWait, DefaultStopHashWait)
	setDur(&c.BanDuration, DefaultBanDuration)
	setDur(&c.TxRelayTimeout, DefaultTxRelayTimeout)
	if c.UserAgent == "" {
		c.UserAgent = "/cfindexd:0.1.0/"
	}
	if c.Metrics == nil {
		c.Metrics = NopMetrics{}
	}
	return c
}

// Validate reports the first invalid setting, wrapping ErrBadConfig.
func (c Config) Validate() error {
	c = c.withDefaults()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Params == nil:
		return bad("Params is required")
	case c.View == nil:
		return bad("View is required")
	case c.RelayTx && c.Relay == nil:
		return bad("RelayTx needs a Relay")
	case c.MaxPeers < 1 || c.MaxPeersPerIP < 1:
		return bad("MaxPeers %d and MaxPeersPerIP %d must be positive", c.MaxPeers, c.MaxPeersPerIP)
	case c.StopHashWait < 0 || c.StopHashWait > MaxStopHashWait:
		return bad("StopHashWait %v outside 0..%v", c.StopHashWait, MaxStopHashWait)
	case c.HandshakeTimeout < 0 || c.IdleTimeout < 0 || c.PingInterval < 0 || c.WriteTimeout < 0 || c.TxRelayTimeout < 0:
		return bad("timeouts must be positive")
	case c.PingInterval >= c.IdleTimeout:
		return bad("PingInterval %v must be below IdleTimeout %v", c.PingInterval, c.IdleTimeout)
	case c.PeerSendBudget < 1 || c.MaxFilterWork < 1 || c.BlockCacheBlocks < 1:
		return bad("PeerSendBudget, MaxFilterWork and BlockCacheBlocks must be positive")
	case len(c.UserAgent) > 256:
		return bad("UserAgent longer than 256 bytes")
	}
	return nil
}
