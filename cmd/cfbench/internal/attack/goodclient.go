package attack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/load"
	"github.com/cfindexd/cfindexd/internal/p2pclient"
)

// GoodResult is what the well-behaved client saw during one class.
type GoodResult struct {
	// Requests are the answered requests of each kind: getcfilters of
	// goodFilterRange blocks, getcfheaders of goodHeaderRange blocks (P2P),
	// a REST filter and a bulk filter-headers file (HTTP).
	Filters  int `json:"getcfilters"`
	Headers  int `json:"getcfheaders"`
	REST     int `json:"rest_filters"`
	Bulk     int `json:"bulk_files"`
	Requests int `json:"requests"`
	// Refused counts failures: a P2P dial or handshake refused, a request
	// not answered (disconnect, timeout, wrong bytes), an HTTP request
	// refused or answered anything but 200 with the right bytes.
	// BulkRefused are those of bulk files (503 while every bulk slot is
	// taken) within Refused.
	Refused      int    `json:"refused"`
	BulkRefused  int    `json:"bulk_refused"`
	FirstRefusal string `json:"first_refusal,omitempty"`
	// Evicted counts the P2P connections the server ended after it had
	// answered at least one request on them; Wrong the answers, P2P or
	// HTTP, whose bytes differed from btcd's (within Refused).
	Evicted int `json:"evicted"`
	Wrong   int `json:"wrong_answers"`
	// Latency is over every answered request, P2P and HTTP; ByKind per
	// kind of request.
	Latency load.LatencyStats            `json:"latency"`
	ByKind  map[string]load.LatencyStats `json:"latency_by_kind"`
}

// Ranges the well-behaved client asks for.
const (
	goodFilterRange = 100
	goodHeaderRange = 1000
	// goodRequestTimeout is how long the client waits for one answer
	// before it counts a refusal (the goal is 2 s at the 99th percentile).
	goodRequestTimeout = 20 * time.Second
	// goodRetryPause is the client's pause after a refusal.
	goodRetryPause = 250 * time.Millisecond
)

// GoodClient is a well-behaved light client from its own address: it
// asks for filters and filter headers over P2P and a filter and a bulk
// filter-headers file over HTTP in a closed loop, checking every byte
// against btcd's filters.
type GoodClient struct {
	p2pAddr, httpAddr, ip string
	transport             p2pclient.Transport
	exp                   *load.Expected
	params                *chaincfg.Params
	rng                   *rand.Rand
	http                  *http.Client

	mu     sync.Mutex
	res    GoodResult
	lat    []time.Duration
	byKind map[*int][]time.Duration
}

// NewGoodClient makes the client of spot (its address; v2 or v1); it runs
// with Run.
func NewGoodClient(p2pAddr, httpAddr string, spot Spot, params *chaincfg.Params, exp *load.Expected, seed uint64) *GoodClient {
	dialer := &net.Dialer{Timeout: hostileIOTimeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(spot.IP)}}
	transport := p2pclient.TransportV1
	if spot.V2 {
		transport = p2pclient.TransportV2
	}
	return &GoodClient{
		p2pAddr: p2pAddr, httpAddr: httpAddr, ip: spot.IP, transport: transport, params: params, exp: exp,
		rng: rand.New(rand.NewPCG(seed, 7)),
		http: &http.Client{
			Timeout:   goodRequestTimeout,
			Transport: &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 2, DisableCompression: true},
		},
	}
}

// refuse records a refusal.
func (g *GoodClient) refuse(bulk bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.res.Refused++
	if errors.Is(err, errWrongAnswer) {
		g.res.Wrong++
	}
	if bulk {
		g.res.BulkRefused++
	}
	if g.res.FirstRefusal == "" {
		g.res.FirstRefusal = err.Error()
	}
}

// answered records an answered request of kind (a counter of res).
func (g *GoodClient) answered(kind *int, took time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	*kind++
	g.res.Requests++
	g.lat = append(g.lat, took)
	if g.byKind == nil {
		g.byKind = make(map[*int][]time.Duration)
	}
	g.byKind[kind] = append(g.byKind[kind], took)
}

// result returns what the client saw so far.
func (g *GoodClient) Result() GoodResult {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.res
	r.Latency = load.NewLatencyStats(append([]time.Duration(nil), g.lat...))
	r.ByKind = make(map[string]load.LatencyStats)
	for name, kind := range map[string]*int{"getcfilters": &g.res.Filters, "getcfheaders": &g.res.Headers, "rest": &g.res.REST, "bulk": &g.res.Bulk} {
		r.ByKind[name] = load.NewLatencyStats(append([]time.Duration(nil), g.byKind[kind]...))
	}
	return r
}

// run loops until ctx ends.
func (g *GoodClient) Run(ctx context.Context) {
	defer g.http.CloseIdleConnections()
	tip := uint32(len(g.exp.Hashes) - 1)
	var peer *load.Peer
	servedOn := false // peer answered a request
	// lost ends peer after err; a connection the server ended after
	// answering on it counts as an eviction, an answer that failed the
	// check as wrong.
	lost := func(what string, err error) {
		if ctx.Err() != nil {
			return
		}
		if !lostConnection(err) {
			err = fmt.Errorf("%w: %w", errWrongAnswer, err)
		} else if servedOn {
			g.mu.Lock()
			g.res.Evicted++
			g.mu.Unlock()
		}
		g.refuse(false, fmt.Errorf("%s: %w", what, err))
	}
	defer func() {
		if peer != nil {
			peer.Close()
		}
	}()
	pause := func() {
		select {
		case <-ctx.Done():
		case <-time.After(goodRetryPause):
		}
	}
	for ctx.Err() == nil {
		if peer == nil {
			p, err := load.DialOver(g.p2pAddr, g.ip, g.transport, g.params, g.rng.Uint64(), hostileIOTimeout)
			if err != nil {
				if ctx.Err() == nil {
					g.refuse(false, fmt.Errorf("P2P connect: %w", err))
					pause()
				}
				continue
			}
			peer, servedOn = p, false
		}
		// getcfilters of goodFilterRange blocks at a random place.
		first := g.rng.Uint32N(tip + 2 - min(goodFilterRange, tip+1))
		stop := min(first+goodFilterRange-1, tip)
		if err := g.p2p(peer, &g.res.Filters, func() error {
			_, _, err := peer.GetCFilters(g.exp, first, stop)
			return err
		}); err != nil {
			lost(fmt.Sprintf("getcfilters %d..%d", first, stop), err)
			pause()
			peer.Close()
			peer = nil
			continue
		}
		servedOn = true
		first = g.rng.Uint32N(tip + 2 - min(goodHeaderRange, tip+1))
		stop = min(first+goodHeaderRange-1, tip)
		if err := g.p2p(peer, &g.res.Headers, func() error {
			_, _, err := peer.GetCFHeaders(g.exp, first, stop)
			return err
		}); err != nil {
			lost(fmt.Sprintf("getcfheaders %d..%d", first, stop), err)
			pause()
			peer.Close()
			peer = nil
			continue
		}
		g.restFilter(ctx, g.rng.Uint32N(tip+1))
		g.bulkHeaders(ctx)
	}
}

// p2p runs one request on peer under goodRequestTimeout and records it.
func (g *GoodClient) p2p(peer *load.Peer, kind *int, req func() error) error {
	_ = peer.SetDeadline(time.Now().Add(goodRequestTimeout))
	start := time.Now()
	if err := req(); err != nil {
		return err
	}
	g.answered(kind, time.Since(start))
	return nil
}

// get fetches path over HTTP and returns the body of a 200.
func (g *GoodClient) get(ctx context.Context, path string) ([]byte, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+g.httpAddr+path, nil)
	if err != nil {
		return nil, 0, err
	}
	start := time.Now()
	resp, err := g.http.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	took := time.Since(start)
	if err != nil {
		return nil, 0, fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return body, took, nil
}

// restFilter fetches height h's filter over REST and checks it holds
// btcd's filter.
func (g *GoodClient) restFilter(ctx context.Context, h uint32) {
	path := "/rest/blockfilter/basic/" + g.exp.Hashes[h].String() + ".bin"
	body, took, err := g.get(ctx, path)
	if err == nil {
		// Core's .bin (the filter type, the block hash, the filter with
		// its length) is the cfilter message's payload.
		if want := g.exp.CFilterFrame(h)[wire.MessageHeaderSize:]; !bytes.Equal(body, want) {
			err = fmt.Errorf("%w: GET %s: %d bytes differing from btcd's filter", errWrongAnswer, path, len(body))
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			g.refuse(false, err)
		}
		return
	}
	g.answered(&g.res.REST, took)
}

// bulkHeaders fetches the first bulk filter-headers file and checks it.
func (g *GoodClient) bulkHeaders(ctx context.Context) {
	end := min(uint32(len(g.exp.Hashes)-1), 1999)
	path := "/bulk/filterheaders/0-" + strconv.FormatUint(uint64(end), 10) + ".bin"
	body, took, err := g.get(ctx, path)
	if err == nil {
		for h := uint32(0); h <= end && err == nil; h++ {
			if off := int(h) * chainhash.HashSize; len(body) < off+chainhash.HashSize || !bytes.Equal(body[off:off+chainhash.HashSize], g.exp.FilterHeaders[h][:]) {
				err = fmt.Errorf("%w: GET %s: filter header %d differs from btcd's", errWrongAnswer, path, h)
			}
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			g.refuse(true, err)
		}
		return
	}
	g.answered(&g.res.Bulk, took)
}

// errWrongAnswer marks an answer whose bytes differ from btcd's.
var errWrongAnswer = errors.New("answer differs from btcd's")

// newRand is a PCG generator of seeds a, b.
func newRand(a, b uint64) *rand.Rand { return rand.New(rand.NewPCG(a, b)) }
