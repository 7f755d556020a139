package load

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/p2pclient"
)

const (
	// filtersPerRequest is the getcfilters range (BIP-157's maximum).
	filtersPerRequest = wire.MaxGetCFiltersReqRange
	// headersPerRequest is the getcfheaders range (BIP-157's maximum).
	headersPerRequest = wire.MaxCFHeadersPerMsg
	// maxConcurrentHandshakes bounds the peers handshaking at once.
	maxConcurrentHandshakes = 4
)

// Config is one load run against one server.
type Config struct {
	Addr   string
	Params *chaincfg.Params
	// Hashes are the active chain's block hashes by height.
	Hashes []chainhash.Hash
	// Expected holds every answer's bytes; each answer is compared with
	// them.
	Expected *Expected
	Peers    int
	// Warmup runs the load without counting it; Duration is the measured
	// window after it.
	Warmup   time.Duration
	Duration time.Duration
	// FilterShare is the fraction of requests that are getcfilters; the
	// rest are getcfheaders.
	FilterShare float64
	// Seed fixes every peer's sequence of requests (peer i uses the
	// stream (Seed, i)), so both servers get the same sequences.
	Seed uint64
	// RequestTimeout bounds one request's whole response.
	RequestTimeout time.Duration
	// Transport is the peers' transport: v1 (the zero value) or v2.
	Transport p2pclient.Transport
}

// Result is what one load run measured in its window.
type Result struct {
	Peers         int           `json:"peers"`
	Window        time.Duration `json:"window_ns"`
	FilterReqs    int           `json:"getcfilters_done"`
	HeaderReqs    int           `json:"getcfheaders_done"`
	Filters       int64         `json:"filters"`
	FilterHashes  int64         `json:"filter_hashes"`
	Bytes         int64         `json:"bytes"`
	FiltersPerS   float64       `json:"filters_per_s"`
	MBPerS        float64       `json:"mb_per_s"`
	FilterLatency LatencyStats  `json:"getcfilters_latency"`
	HeaderLatency LatencyStats  `json:"getcfheaders_latency"`
	Errors        int           `json:"errors"`
	FirstError    string        `json:"first_error,omitempty"`
	// RunFilters and RunFilterHashes count what was served over the whole
	// run (warm-up and the requests that ended after the window too), the
	// span the CPU times cover.
	RunFilters      int64 `json:"run_filters"`
	RunFilterHashes int64 `json:"run_filter_hashes"`
	// ServerCPU is the server's CPU time over the whole run (warm-up
	// included) and ServerCPUShare that over the run's wall time; filled
	// by the caller from /proc. ClientCPU and ClientCPUShare are the same
	// for the load generator (cfbench itself). The per-filter figures
	// divide them by RunFilters: with -filtershare below 1 they include
	// the getcfheaders work.
	ServerCPU         time.Duration `json:"server_cpu_ns"`
	ServerCPUShare    float64       `json:"server_cpu_share"`
	ClientCPU         time.Duration `json:"client_cpu_ns"`
	ClientCPUShare    float64       `json:"client_cpu_share"`
	ServerNsPerFilter float64       `json:"server_cpu_ns_per_filter"`
	ClientNsPerFilter float64       `json:"client_cpu_ns_per_filter"`
}

// LatencyStats summarises request latencies (send to last response byte).
type LatencyStats struct {
	Count int           `json:"count"`
	P50   time.Duration `json:"p50_ns"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
}

// NewLatencyStats computes the stats of ds, sorting it.
func NewLatencyStats(ds []time.Duration) LatencyStats {
	if len(ds) == 0 {
		return LatencyStats{}
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(q*float64(len(ds))))] }
	return LatencyStats{Count: len(ds), P50: at(0.50), P99: at(0.99), Max: ds[len(ds)-1]}
}

// peerTally is one peer's counts inside the window.
type peerTally struct {
	filterLat, headerLat []time.Duration
	filters, hashes      int64
	bytes                int64
	// runFilters and runHashes count every completed request, in the
	// window or not.
	runFilters, runHashes int64
	err                   error
}

// Run connects cfg.Peers peers to the server, then has each send one
// request at a time (closed loop) until the window ends, and returns what
// completed inside the window.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if len(cfg.Hashes) == 0 {
		return Result{}, errors.New("load: no chain")
	}
	if cfg.Expected == nil {
		return Result{}, errors.New("load: no expected answers to check against")
	}
	peers := make([]*Peer, cfg.Peers)
	var wg sync.WaitGroup
	dialErrs := make([]error, cfg.Peers)
	// btcd v0.26.2 refuses a source /24 with more than 8 handshakes in
	// progress (internal/inbound); the peers connect a few at a time, which
	// the measurement does not include.
	handshakes := make(chan struct{}, maxConcurrentHandshakes)
	for i := range peers {
		wg.Go(func() {
			handshakes <- struct{}{}
			defer func() { <-handshakes }()
			peers[i], dialErrs[i] = dialRetrying(ctx, cfg, cfg.Seed<<20+uint64(i))
		})
	}
	wg.Wait()
	defer func() {
		for _, p := range peers {
			if p != nil {
				p.Close()
			}
		}
	}()
	failed, first := 0, error(nil)
	for _, err := range dialErrs {
		if err != nil {
			failed++
			first = cmp.Or(first, err)
		}
	}
	if failed > 0 {
		return Result{}, fmt.Errorf("%d of %d peers failed to connect to %s; first: %w", failed, cfg.Peers, cfg.Addr, first)
	}

	begin := time.Now().Add(50 * time.Millisecond)
	from := begin.Add(cfg.Warmup)
	until := from.Add(cfg.Duration)
	tallies := make([]peerTally, cfg.Peers)
	for i, p := range peers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(i)))
			tallies[i] = drivePeer(ctx, p, rng, cfg, begin, from, until)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("load: %w", err)
	}

	res := Result{Peers: cfg.Peers, Window: cfg.Duration}
	var fl, hl []time.Duration
	for _, t := range tallies {
		fl = append(fl, t.filterLat...)
		hl = append(hl, t.headerLat...)
		res.Filters += t.filters
		res.FilterHashes += t.hashes
		res.RunFilters += t.runFilters
		res.RunFilterHashes += t.runHashes
		res.Bytes += t.bytes
		if t.err != nil {
			res.Errors++
			if res.FirstError == "" {
				res.FirstError = t.err.Error()
			}
		}
	}
	res.FilterReqs, res.HeaderReqs = len(fl), len(hl)
	res.FilterLatency, res.HeaderLatency = NewLatencyStats(fl), NewLatencyStats(hl)
	res.FiltersPerS = float64(res.Filters) / cfg.Duration.Seconds()
	res.MBPerS = float64(res.Bytes) / 1e6 / cfg.Duration.Seconds()
	return res, nil
}

// v2RateWait bounds how long a load peer retries a v2 handshake the
// server refused: cfindexd starts at most 10 a second from one network
// group (p2p.DefaultV2HandshakeRate, bursts of 40) and the load peers all
// dial from 127.0.0.1. Connecting is not measured.
const v2RateWait = 30 * time.Second

// dialRetrying connects one load peer; over v2 a refused handshake is
// retried a quarter of a second later, for up to v2RateWait.
func dialRetrying(ctx context.Context, cfg Config, nonce uint64) (*Peer, error) {
	deadline := time.Now().Add(v2RateWait)
	for {
		p, err := DialOver(cfg.Addr, "", cfg.Transport, cfg.Params, nonce, 10*time.Second)
		if err == nil || cfg.Transport == p2pclient.TransportV1 || time.Now().After(deadline) || ctx.Err() != nil {
			return p, err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// drivePeer runs one peer's closed loop from begin to until; requests that
// start at or after from and complete by until are counted. A failed
// request ends the peer's loop and is returned in the tally.
func drivePeer(ctx context.Context, p *Peer, rng *rand.Rand, cfg Config, begin, from, until time.Time) peerTally {
	var t peerTally
	time.Sleep(time.Until(begin)) // line all peers up at the same start
	tip := uint32(len(cfg.Hashes) - 1)
	for ctx.Err() == nil {
		start := time.Now()
		if !start.Before(until) {
			return t
		}
		filters := rng.Float64() < cfg.FilterShare
		span := uint32(headersPerRequest)
		if filters {
			span = filtersPerRequest
		}
		first := uint32(0)
		if tip+1 > span {
			first = rng.Uint32N(tip + 2 - span)
		}
		stop := min(first+span-1, tip)
		if err := p.SetDeadline(start.Add(cfg.RequestTimeout)); err != nil {
			t.err = err
			return t
		}
		var n, size int64
		var err error
		if filters {
			n, size, err = p.GetCFilters(cfg.Expected, first, stop)
		} else {
			n, size, err = p.GetCFHeaders(cfg.Expected, first, stop)
		}
		done := time.Now()
		if err != nil {
			t.err = fmt.Errorf("%s %d..%d: %w", requestName(filters), first, stop, err)
			return t
		}
		if filters {
			t.runFilters += n
		} else {
			t.runHashes += n
		}
		if start.Before(from) || done.After(until) {
			continue
		}
		t.bytes += size
		if filters {
			t.filters += n
			t.filterLat = append(t.filterLat, done.Sub(start))
		} else {
			t.hashes += n
			t.headerLat = append(t.headerLat, done.Sub(start))
		}
	}
	return t
}

// requestName names a request kind in errors.
func requestName(filters bool) string {
	if filters {
		return wire.CmdGetCFilters
	}
	return wire.CmdGetCFHeaders
}

// getCFilters requests the basic filters of heights first..Stop and reads
// one cfilter per block, checking each frame, byte for byte, against the
// expected one (btcd's filter, wire's encoding, the checksum included).
// It returns the filters and bytes received.
func (p *Peer) GetCFilters(exp *Expected, first, stop uint32) (int64, int64, error) {
	if err := p.send(wire.NewMsgGetCFilters(wire.GCSFilterRegular, first, &exp.Hashes[stop])); err != nil {
		return 0, 0, err
	}
	var size int64
	for h := first; h <= stop; {
		f, err := p.read()
		if err != nil {
			return 0, 0, err
		}
		if !f.Header.Is(wire.CmdCFilter) {
			continue // inv, addr, feefilter...: not part of the answer
		}
		if err := exp.checkCFilter(h, f.Header, f.Payload, p.sums()); err != nil {
			return 0, 0, fmt.Errorf("cfilter %d of the range: %w", h-first, err)
		}
		size += int64(f.Size())
		h++
	}
	return int64(stop - first + 1), size, nil
}

// getCFHeaders requests the filter hashes of heights first..Stop and reads
// the cfheaders answer, checking every byte of it against the expected
// answer.
func (p *Peer) GetCFHeaders(exp *Expected, first, stop uint32) (int64, int64, error) {
	if err := p.send(wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, first, &exp.Hashes[stop])); err != nil {
		return 0, 0, err
	}
	for {
		f, err := p.read()
		if err != nil {
			return 0, 0, err
		}
		if !f.Header.Is(wire.CmdCFHeaders) {
			continue
		}
		if err := exp.checkCFHeaders(first, stop, f.Header, f.Payload, p.sums()); err != nil {
			return 0, 0, err
		}
		return int64(stop - first + 1), int64(f.Size()), nil
	}
}
