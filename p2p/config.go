package p2p

import (
	"fmt"
	"net/netip"
	"runtime"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/p2p/bip37"
	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
	"github.com/cfindexd/cfindexd/p2p/spfilter"
)

// Defaults for Config fields left zero.
const (
	DefaultMaxPeers          = 125
	DefaultMaxPeersPerIP     = 8
	DefaultMaxPeersPerSubnet = 32
	DefaultHandshakeTimeout  = 30 * time.Second
	DefaultIdleTimeout       = 20 * time.Minute // Core's TIMEOUT_INTERVAL
	DefaultPingInterval      = 2 * time.Minute  // Core's PING_INTERVAL
	DefaultWriteTimeout      = 2 * time.Minute
	DefaultStopHashWait      = 5 * time.Second
	// DefaultDiscourageDuration is how long a misbehaving address stays
	// discouraged (Core keeps it until its filter rolls over or a restart).
	DefaultDiscourageDuration = 24 * time.Hour
	// DefaultPeerSendBudget is Core's -maxsendbuffer (1,000 KB), rounded.
	DefaultPeerSendBudget   = 1 << 20
	DefaultSendBudget       = 32 << 20
	DefaultSendStallTimeout = time.Minute
	DefaultRecvBudget       = 4 << 20
	// DefaultMinRecvRate lets a 4 MB frame take about four minutes.
	DefaultMinRecvRate     = 16 << 10
	DefaultBlockCacheBytes = 16 << 20
	// DefaultMaxBlockFetches: each fetch is a getblock RPC holding a block
	// several times over (hex, decoded, encoded) until it is cached.
	DefaultMaxBlockFetches = 2
	DefaultTxRelayTimeout  = 30 * time.Second
	// DefaultTxRelayRate is the server-wide rate of transactions passed to
	// the node, per second (bursts of ten times as many).
	DefaultTxRelayRate = 20
	// DefaultMaxUploadTarget is the upload target a daemon should start
	// with (5,000 MiB of blocks a day); a zero Config.MaxUploadTarget
	// means no target, so it is not applied to Config.
	DefaultMaxUploadTarget = 5000 << 20

	// DefaultV2HandshakeRate is how many v2 handshakes a second one
	// network group may start (bursts of four times as many).
	DefaultV2HandshakeRate = 10

	// DefaultMaxDiscouraged bounds the discouraged addresses remembered.
	DefaultMaxDiscouraged = peerpolicy.DefaultMaxDiscouraged

	// MaxStopHashWait bounds Config.StopHashWait: a peer's reader is parked
	// for that long, so it must stay short.
	MaxStopHashWait = 5 * time.Second
)

// Config configures a Server. Zero values take the defaults above.
type Config struct {
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
	// SilentPayments serves the silent-payment index as the experimental
	// filter type spfilter.FilterType, advertised with
	// spfilter.ServiceFlag; nil refuses the type as unknown.
	SilentPayments spfilter.View

	// UserAgent is this server's BIP-14 user agent, e.g. "/cfindexd:0.1.0/".
	UserAgent string

	// MaxPeers bounds connections (handshaking included); when it is
	// reached, a new connection evicts a peer (peerpolicy.SelectPeerToEvict)
	// or is refused. No newcomer is refused while slots are free.
	// MaxPeersPerIP (per IPv4 address or IPv6 /64) and MaxPeersPerSubnet
	// (per IPv4 /16 or IPv6 /32) are eviction levels, not caps: when the
	// server is full, the idle peers an address or netgroup holds beyond
	// MaxPeersPerIP or MaxPeersPerSubnet lose eviction's protections and
	// are evicted first.
	MaxPeers          int
	MaxPeersPerIP     int
	MaxPeersPerSubnet int
	// Whitelist lists networks whose peers are exempt from eviction,
	// discouragement and the upload target (ParseWhitelist): a trusted
	// reverse proxy, Tor.
	Whitelist []netip.Prefix

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

	// DiscourageDuration is how long a misbehaving peer's address (IPv4
	// address, IPv6 /64) stays discouraged: admitted while two or more
	// slots are free or in place of a peer idle for
	// peerpolicy.DiscouragedMinIdle, and evicted first. Negative disables discouragement (the peer is
	// still disconnected). MaxDiscouraged bounds the list; the oldest
	// entries go first (default DefaultMaxDiscouraged).
	DiscourageDuration time.Duration
	MaxDiscouraged     int

	// PeerSendBudget bounds the bytes queued for one peer and not yet
	// written; SendBudget bounds them across all peers: a reserve of
	// SendBudget/(2·MaxPeers) (at most PeerSendBudget) for each peer, the
	// rest shared and granted to the waiting peer served least lately. A
	// handler that cannot queue waits, and the peer's next request is not
	// read meanwhile; a peer whose queue is empty may always queue one
	// frame (or one chunk of cfilter frames, at most the largest frame).
	// A peer whose queue stays full without a frame written for
	// SendStallTimeout is disconnected.
	PeerSendBudget   int
	SendBudget       int64
	SendStallTimeout time.Duration
	// RecvBudget bounds, across peers, the bytes of large frames (over
	// 16 KiB) buffered to be decoded; a large frame that does not fit is
	// discarded unread. MinRecvRate is the rate (bytes per second) below
	// which a large frame's sender is disconnected.
	RecvBudget  int64
	MinRecvRate int64
	// MaxFilterWork bounds store reads and answer building in progress
	// across all peers (default 2×GOMAXPROCS); a free slot goes to the
	// waiting peer with the fewest recent turns, a request costing a turn
	// per quantum of work (peerpolicy.NewTurnQueue).
	MaxFilterWork int

	// BlockCacheBytes bounds the cache of encoded blocks served.
	BlockCacheBytes int64
	// MaxBlockFetches bounds node fetches for peers in progress; while
	// IndexerBusy reports true (the indexer is catching up) only one runs.
	// Waiting fetches take turns by netgroup, then by peer, one in
	// progress per peer (blockproxy.Gate).
	MaxBlockFetches int
	IndexerBusy     func() bool
	// MaxUploadTarget is Core's -maxuploadtarget in bytes of blocks served
	// per 24 hours; once reached, or once a peer's netgroup was served
	// 1/peerpolicy.UploadGroupShare of it, blocks more than a week older
	// than the tip, plain or filtered, are refused (their requester
	// disconnected) unless the peer is whitelisted; recent blocks are
	// always served. 0 means no target.
	MaxUploadTarget int64

	// TxRelayTimeout bounds one TxRelayer call; TxRelayRate is the
	// server-wide number of transactions relayed per second (each peer
	// also has its own rate).
	TxRelayTimeout time.Duration
	TxRelayRate    float64

	// DisableV2 turns BIP-324's v2 transport off: only v1 is spoken, no
	// NODE_P2P_V2 is advertised, and the first bytes of a connection are
	// not looked at. With v2 on (the default) both are accepted on the one
	// port (package transport).
	DisableV2 bool
	// V2HandshakeSlots bounds the curve steps of v2 handshakes running at
	// once, server-wide (default half of GOMAXPROCS, at least one);
	// V2HandshakeRate is how many handshakes a second one network group
	// may start, bursts of four times as many (peerpolicy.HandshakeGate).
	V2HandshakeSlots int
	V2HandshakeRate  float64

	// BIP-37 Bloom-filter serving (package bip37 has the defaults and
	// what each bound means).
	Bloom bip37.Config

	// Log receives the server's log lines; misbehaving peers log at debug.
	Log zerolog.Logger
	// Metrics receives counters; nil means NopMetrics.
	Metrics Metrics
	// Now is the clock (default time.Now); tests move it.
	Now func() time.Time
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	setInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	setInt64 := func(v *int64, d int64) {
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
	setInt(&c.MaxPeersPerSubnet, DefaultMaxPeersPerSubnet)
	setInt(&c.PeerSendBudget, DefaultPeerSendBudget)
	setInt64(&c.SendBudget, DefaultSendBudget)
	setInt64(&c.RecvBudget, DefaultRecvBudget)
	setInt64(&c.MinRecvRate, DefaultMinRecvRate)
	setInt(&c.MaxFilterWork, 2*runtime.GOMAXPROCS(0))
	setInt64(&c.BlockCacheBytes, DefaultBlockCacheBytes)
	setInt(&c.MaxBlockFetches, DefaultMaxBlockFetches)
	setInt(&c.MaxDiscouraged, DefaultMaxDiscouraged)
	setInt(&c.V2HandshakeSlots, max(1, runtime.GOMAXPROCS(0)/2))
	if c.V2HandshakeRate == 0 {
		c.V2HandshakeRate = DefaultV2HandshakeRate
	}
	setDur(&c.HandshakeTimeout, DefaultHandshakeTimeout)
	setDur(&c.IdleTimeout, DefaultIdleTimeout)
	setDur(&c.PingInterval, DefaultPingInterval)
	setDur(&c.WriteTimeout, DefaultWriteTimeout)
	setDur(&c.StopHashWait, DefaultStopHashWait)
	setDur(&c.DiscourageDuration, DefaultDiscourageDuration)
	setDur(&c.SendStallTimeout, DefaultSendStallTimeout)
	setDur(&c.TxRelayTimeout, DefaultTxRelayTimeout)
	if c.TxRelayRate == 0 {
		c.TxRelayRate = DefaultTxRelayRate
	}
	if c.UserAgent == "" {
		c.UserAgent = "/cfindexd:0.1.0/"
	}
	c.Bloom = c.Bloom.WithDefaults()
	if c.Metrics == nil {
		c.Metrics = NopMetrics{}
	}
	if c.Now == nil {
		c.Now = time.Now
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
	case c.StopHashWait < 0 || c.StopHashWait > MaxStopHashWait:
		return bad("StopHashWait %v outside 0..%v", c.StopHashWait, MaxStopHashWait)
	case c.HandshakeTimeout < 0 || c.IdleTimeout < 0 || c.PingInterval < 0 || c.WriteTimeout < 0 ||
		c.TxRelayTimeout < 0:
		return bad("timeouts must be positive")
	case c.PingInterval >= c.IdleTimeout:
		return bad("PingInterval %v must be below IdleTimeout %v", c.PingInterval, c.IdleTimeout)
	case c.MinRecvRate < 1:
		return bad("MinRecvRate must be positive")
	case c.MaxFilterWork < 1 || c.BlockCacheBytes < 1 || c.MaxDiscouraged < 1 || c.V2HandshakeSlots < 1 ||
		!(c.V2HandshakeRate > 0):
		return bad("MaxFilterWork, BlockCacheBytes, MaxDiscouraged, V2HandshakeSlots and V2HandshakeRate must be positive")
	case len(c.UserAgent) > 256:
		return bad("UserAgent longer than 256 bytes")
	}
	if err := c.CheckLimits(); err != nil {
		return err
	}
	if err := c.Bloom.Validate(); err != nil {
		return bad("Bloom.%v", err)
	}
	return nil
}

// Limit is the range Min..Max (inclusive) a Config setting may take, in
// the setting's own units: a count, bytes, nanoseconds, per second.
type Limit struct{ Min, Max float64 }

// LimitError is the error of a setting outside its Limit: Field names the
// Config field. It wraps ErrBadConfig.
type LimitError struct {
	Field string
	Value float64
	Limit Limit
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%v: %s %v is outside %v..%v", ErrBadConfig, e.Field, e.Value, e.Limit.Min, e.Limit.Max)
}

func (e *LimitError) Unwrap() error { return ErrBadConfig }

// CheckLimits reports the first of the operator's settings outside its
// range as a *LimitError: the peer caps, the send and receive budgets,
// the stall timeout, block fetches, the upload target and the relay rate.
// It checks c as it is: Validate applies the defaults first, while a
// daemon checking its own keys sees a zero as zero.
func (c Config) CheckLimits() error {
	for _, s := range []struct {
		field string
		value float64
		limit Limit
	}{
		{"MaxPeers", float64(c.MaxPeers), Limit{1, 10000}},
		{"MaxPeersPerIP", float64(c.MaxPeersPerIP), Limit{1, 10000}},
		{"MaxPeersPerSubnet", float64(c.MaxPeersPerSubnet), Limit{1, 10000}},
		{"SendBudget", float64(c.SendBudget), Limit{1 << 20, 64 << 30}},
		{"PeerSendBudget", float64(c.PeerSendBudget), Limit{16 << 10, 1 << 30}},
		{"RecvBudget", float64(c.RecvBudget), Limit{1 << 20, 4 << 30}},
		{"SendStallTimeout", float64(c.SendStallTimeout), Limit{float64(time.Second), float64(time.Hour)}},
		{"MaxBlockFetches", float64(c.MaxBlockFetches), Limit{1, 64}},
		{"MaxUploadTarget", float64(c.MaxUploadTarget), Limit{0, 16 << 40}},
		{"TxRelayRate", c.TxRelayRate, Limit{1, 10000}},
	} {
		if !(s.value >= s.limit.Min && s.value <= s.limit.Max) {
			return &LimitError{Field: s.field, Value: s.value, Limit: s.limit}
		}
	}
	return nil
}
