package httpapi

import (
	"fmt"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Defaults for the zero fields of Config.
const (
	DefaultReorgSafetyDepth  = 144
	DefaultReadyMaxLag       = 2
	DefaultNearTipMaxAge     = 30 * time.Second
	DefaultMaxBulkInFlight   = 8
	DefaultMaxHeaderBytes    = 16 << 10
	DefaultMaxURILength      = 4096
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultBulkWriteTimeout  = 15 * time.Minute
	DefaultIdleTimeout       = 30 * time.Second
	DefaultShutdownTimeout   = 10 * time.Second
	DefaultCatalogWarmPace   = 50 * time.Millisecond
	DefaultCatalogWarmPoll   = 10 * time.Second

	// Connection and bulk limits (see Config).
	DefaultMaxConns          = 512
	DefaultMaxConnsPerAddr   = 32
	DefaultMaxBulkPerAddr    = 2
	DefaultBulkMinRate       = 32 << 10 // bytes per second
	DefaultBulkMinRateWindow = 10 * time.Second

	// MaxIdleTimeout caps IdleTimeout: an idle keep-alive connection
	// holds a file descriptor and a goroutine for nothing.
	MaxIdleTimeout = 60 * time.Second
)

// Config configures the HTTP server. Zero values take the defaults above.
type Config struct {
	// Net is the network magic written into neutrino import files
	// (wire.MainNet, wire.TestNet3, wire.TestNet, ...). Zero means
	// wire.MainNet.
	Net wire.BitcoinNet
	// NetName and Genesis name the chain in /manifest.json (the netparams
	// name and the genesis block's hash). An empty NetName turns
	// /manifest.json and /latest off (404).
	NetName string
	Genesis chainhash.Hash
	// CatalogWarmPace is the least wait, after hashing one final range,
	// before WarmCatalog hashes the next (it also waits as long as the
	// range took, so it uses at most half a core); zero means
	// DefaultCatalogWarmPace.
	CatalogWarmPace time.Duration
	// CatalogWarmPoll is how often WarmCatalog looks for newly final
	// ranges; zero means DefaultCatalogWarmPoll.
	CatalogWarmPoll time.Duration

	// ReorgSafetyDepth: a bulk range whose last height has at least this
	// many blocks on top of it is treated as final and served with a
	// strong ETag and a one-year immutable Cache-Control.
	ReorgSafetyDepth uint32

	// ReadyMaxLag: /readyz answers 200 while the indexed tip is at most this
	// many blocks below the node's last seen tip.
	ReadyMaxLag uint32

	// ReadyMaxTipAge: /readyz answers 503 while the indexed tip's block
	// timestamp is older than this. Zero turns the check off (regtest and
	// simnet, where blocks come only when someone mines them).
	ReadyMaxTipAge time.Duration

	// NearTipMaxAge is the Cache-Control max-age of bulk files and of the
	// bulk index that can still change (ranges within ReorgSafetyDepth of
	// the tip).
	NearTipMaxAge time.Duration

	// MaxBulkInFlight bounds the bulk downloads served at once; more get a
	// 503 with Retry-After.
	MaxBulkInFlight int

	// MaxConns bounds the open HTTP connections, MaxConnsPerAddr those
	// from one client address (an IPv4 address or an IPv6 /64). They are
	// enforced when a connection is accepted: over a cap, a connection of
	// the network (IPv4 /16, IPv6 /32), then the address, holding the most
	// is closed to make room, an idle one (keep-alive, or not yet
	// requesting) before one busy with a request, which goes only if it is
	// not alone in its network and the newcomer's network does not hold
	// fewer; when none may go the new one is answered a fixed 503 and
	// closed at once (no goroutine, no request read).
	MaxConns        int
	MaxConnsPerAddr int

	// MaxBulkPerAddr bounds the bulk downloads from one client address,
	// within MaxBulkInFlight.
	MaxBulkPerAddr int

	// BulkMinRate (bytes per second) and BulkMinRateWindow: every window
	// of every response, the first included, must deliver at least
	// BulkMinRate × BulkMinRateWindow bytes to the client's socket (or the
	// whole answer, if smaller), or the response is cut with its
	// connection (and a bulk download's slot freed). A client that stops
	// reading, pipelining or not, holds its connection for about one
	// window after its socket buffers fill, not for WriteTimeout.
	BulkMinRate       int
	BulkMinRateWindow time.Duration

	// MaxHeaderBytes and MaxURILength bound a request's header block and
	// request target.
	MaxHeaderBytes int
	MaxURILength   int

	// Timeouts of the net/http server. WriteTimeout bounds one response
	// however fast it moves; BulkWriteTimeout replaces it for bulk
	// downloads, which may be large. IdleTimeout (keep-alive) is at most
	// MaxIdleTimeout.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	BulkWriteTimeout  time.Duration
	IdleTimeout       time.Duration

	// ShutdownTimeout bounds the graceful shutdown after the context of
	// Serve ends; connections still open then are closed.
	ShutdownTimeout time.Duration

	// Status supplies the daemon's part of GET /status (status.go); nil
	// serves the store's and the metrics' part only.
	Status StatusFunc

	// SilentPayments is the silent-payment index served under /sp/ and
	// /blindbit/ (spserve.go, blindbit.go); nil answers those 404.
	SilentPayments SPIndex
}

// withDefaults returns cfg with zero fields set to the defaults, or an
// error for values that cannot work.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Net == 0 {
		cfg.Net = wire.MainNet
	}
	if cfg.ReorgSafetyDepth == 0 {
		cfg.ReorgSafetyDepth = DefaultReorgSafetyDepth
	}
	if cfg.ReadyMaxLag == 0 {
		cfg.ReadyMaxLag = DefaultReadyMaxLag
	}
	setDur := func(d *time.Duration, def time.Duration, name string) error {
		if *d < 0 {
			return fmt.Errorf("%w: %s %v is negative", ErrBadConfig, name, *d)
		}
		if *d == 0 {
			*d = def
		}
		return nil
	}
	setInt := func(n *int, def int, name string) error {
		if *n < 0 {
			return fmt.Errorf("%w: %s %d is negative", ErrBadConfig, name, *n)
		}
		if *n == 0 {
			*n = def
		}
		return nil
	}
	if cfg.ReadyMaxTipAge < 0 {
		return Config{}, fmt.Errorf("%w: ready max tip age %v is negative", ErrBadConfig, cfg.ReadyMaxTipAge)
	}
	for _, e := range []error{
		setDur(&cfg.NearTipMaxAge, DefaultNearTipMaxAge, "near-tip max-age"),
		setDur(&cfg.CatalogWarmPace, DefaultCatalogWarmPace, "catalog warm pace"),
		setDur(&cfg.CatalogWarmPoll, DefaultCatalogWarmPoll, "catalog warm poll"),
		setDur(&cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout, "read-header timeout"),
		setDur(&cfg.ReadTimeout, DefaultReadTimeout, "read timeout"),
		setDur(&cfg.WriteTimeout, DefaultWriteTimeout, "write timeout"),
		setDur(&cfg.BulkWriteTimeout, DefaultBulkWriteTimeout, "bulk write timeout"),
		setDur(&cfg.IdleTimeout, DefaultIdleTimeout, "idle timeout"),
		setDur(&cfg.ShutdownTimeout, DefaultShutdownTimeout, "shutdown timeout"),
		setDur(&cfg.BulkMinRateWindow, DefaultBulkMinRateWindow, "bulk min-rate window"),
		setInt(&cfg.MaxBulkInFlight, DefaultMaxBulkInFlight, "max bulk in flight"),
		setInt(&cfg.MaxConns, DefaultMaxConns, "max connections"),
		setInt(&cfg.MaxConnsPerAddr, DefaultMaxConnsPerAddr, "max connections per address"),
		setInt(&cfg.MaxBulkPerAddr, DefaultMaxBulkPerAddr, "max bulk downloads per address"),
		setInt(&cfg.BulkMinRate, DefaultBulkMinRate, "bulk min rate"),
		setInt(&cfg.MaxHeaderBytes, DefaultMaxHeaderBytes, "max header bytes"),
		setInt(&cfg.MaxURILength, DefaultMaxURILength, "max URI length"),
	} {
		if e != nil {
			return Config{}, e
		}
	}
	if cfg.IdleTimeout > MaxIdleTimeout {
		return Config{}, fmt.Errorf("%w: idle timeout %v is above %v", ErrBadConfig, cfg.IdleTimeout, MaxIdleTimeout)
	}
	// A cap per address above the total is the total.
	cfg.MaxConnsPerAddr = min(cfg.MaxConnsPerAddr, cfg.MaxConns)
	cfg.MaxBulkPerAddr = min(cfg.MaxBulkPerAddr, cfg.MaxBulkInFlight)
	return cfg, nil
}
