package bip37

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/bloom"
	"github.com/cfindexd/cfindexd/p2p/blockproxy"
	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
)

// Env is what a Server gets from the P2P server it serves for.
type Env struct {
	Net wire.BitcoinNet
	// Blocks gives filtered blocks their decoded blocks; nil: none are
	// served.
	Blocks *blockproxy.DecodedCache
	// Metrics receives the counters; nil discards them.
	Metrics Metrics
	Log     zerolog.Logger
	Now     func() time.Time
	// NotFound is what a fetch error of a block the node does not have
	// wraps: such a failure is not logged.
	NotFound error
}

// Server is what BIP-37 serving shares across peers. Safe for concurrent
// use.
type Server struct {
	cfg     Config
	env     Env
	meter   *peerpolicy.WorkMeter
	blocks  *blockproxy.DecodedCache // nil without a block source
	mempool Mempool                  // nil: nothing to announce
	metrics Metrics
	// loaded counts peers with a filter loaded.
	loaded atomic.Int64
}

// New returns the server of cfg (defaults applied) over env.
func New(cfg Config, env Env) *Server {
	s := &Server{
		cfg:     cfg,
		env:     env,
		meter:   peerpolicy.NewWorkMeter(cfg.CPUShare, runtime.GOMAXPROCS(0), env.Now).ChargeThreadCPU(),
		blocks:  env.Blocks,
		mempool: cfg.Mempool,
		metrics: env.Metrics,
	}
	if s.metrics == nil {
		s.metrics = nopMetrics{}
	}
	return s
}

// InvalidRequestError is a well-formed request the server refuses: Core
// disconnects such a peer without penalty, and so should the caller.
type InvalidRequestError struct{ Reason string }

func (e *InvalidRequestError) Error() string { return e.Reason }

func invalidRequest(format string, args ...any) error {
	return &InvalidRequestError{Reason: fmt.Sprintf(format, args...)}
}

// checkFPR applies the policy on a filter's estimated false-positive
// rate; the refusal is an invalid request (disconnect without penalty).
func (s *Server) checkFPR(f *bloom.Filter, cmd string) error {
	fpr := f.EstimatedFPR()
	switch {
	case fpr > s.cfg.MaxFPR:
		s.metrics.BloomFilterRefused(refusedTooNoisy)
		return invalidRequest("%s: filter matches nearly everything (estimated false-positive rate %.3g above %.3g)", cmd, fpr, s.cfg.MaxFPR)
	case fpr < s.cfg.MinFPR:
		s.metrics.BloomFilterRefused(refusedTooPrecise)
		return invalidRequest("%s: filter too precise for the privacy floor (estimated false-positive rate %.3g below %.3g)", cmd, fpr, s.cfg.MinFPR)
	}
	return nil
}

// Frame costs charged to the BIP-37 meter for what happens outside it: the
// request's lookups, the writer's copy and syscall, per frame and per byte,
// so that sending is not free beside the matching. The frame's is twice
// what p2p's BenchmarkServeGetCFilters measures for serving a small filter
// whole (store read, frame, queue, write; docs/performance.md): a charge
// above the real cost spends the meter's share on work nobody does, and
// every peer, the light wallet first in line included, waits for it.
const (
	frameCost = time.Microsecond
	byteCost  = 2 * time.Nanosecond
)

// chargeFrames charges p frames frames of bytes bytes sent to it.
func (s *Server) chargeFrames(p *Peer, frames, bytes int) {
	d := time.Duration(frames)*frameCost + time.Duration(bytes)*byteCost
	s.meter.Charge(p.work, d)
	s.metrics.BloomWork(d)
}

// workFor returns the function that takes the BIP-37 CPU meter for p
// (blockproxy.Work, as DecodedCache.Get calls it): shared work is
// charged to the meter, not to p.
func (s *Server) workFor(p *Peer) blockproxy.Work {
	return func(ctx context.Context, shared bool) (func(), error) {
		if !shared {
			return s.work(ctx, p)
		}
		return s.reported(s.meter.AcquireShared(ctx, p.work))
	}
}

// work takes the BIP-37 CPU meter for p (granted to the peer with the
// least recent work) and returns the function that charges the time spent
// to the meter and p, and reports it.
func (s *Server) work(ctx context.Context, p *Peer) (func(), error) {
	return s.reported(s.meter.Acquire(ctx, p.work))
}

// reported wraps the release of a meter grant so that it also reports the
// time from the grant to the release; an error passes through.
func (s *Server) reported(done func(), err error) (func(), error) {
	if err != nil {
		return nil, err
	}
	began := time.Now()
	return func() {
		done()
		s.metrics.BloomWork(time.Since(began))
	}, nil
}
