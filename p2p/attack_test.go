package p2p

// One test per P2P attack class of issue 9, each bounded (loopback, source
// addresses from 127.0.0.0/8 standing in for many hosts, a few seconds,
// small budgets so that the bounds are reached quickly), asserting that
// the peak heap stays under the bound derived from the configuration
// (MemoryBound), that a well-behaved client on a fresh address is admitted
// and answered, and that the server is still up.

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/attackwire"
	"github.com/cfindexd/cfindexd/internal/p2pclient"
	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/nodeclient"
	"github.com/cfindexd/cfindexd/p2p/msgread"
	"github.com/cfindexd/cfindexd/wireframe"
)

const (
	// attackGCPercent keeps the heap close to what is live, so that the
	// sampled peak measures the server's holdings, not the collector's lag.
	attackGCPercent = 25
	// attackClientConnBytes is what one attacker connection costs this
	// process on the client side: its bufio.Reader (4 KiB), the socket and
	// the goroutines' stacks. Attackers never decode what they read
	// (readRaw), so nothing grows with the server's answers.
	attackClientConnBytes = 32 << 10
	// attackHarnessBytes is the rest of the test's side: the well-behaved
	// client (one wire script slab if it decodes a block, 4 MiB), fake
	// nodes and metrics, the sampler.
	attackHarnessBytes = 8 << 20
)

// attackConfig is testConfig with small budgets, so that an attack reaches
// them within seconds, and room for maxPeers peers.
func attackConfig(view *fakeView, maxPeers int) Config {
	cfg := testConfig(view)
	cfg.MaxPeers = maxPeers
	cfg.PeerSendBudget = 64 << 10
	cfg.SendBudget = 1 << 20
	cfg.RecvBudget = 1 << 20
	cfg.SendStallTimeout = time.Second
	cfg.MaxFilterWork = 4
	cfg.MaxDiscouraged = 10_000
	cfg.BlockCacheBytes = 256 << 10
	return cfg
}

// heapWatch samples the heap while an attack runs: the live heap the
// collector last marked (runtime/metrics /gc/heap/live:bytes), which is
// what the server and the clients hold, and HeapAlloc, which adds the
// garbage not collected yet.
type heapWatch struct {
	t         *testing.T
	clients   int
	baseline  uint64
	peakLive  atomic.Uint64
	peakAlloc atomic.Uint64
	stop      chan struct{}
	done      chan struct{}
	gc        int
}

// watchHeap lowers the GC target, takes the baseline (the live heap after
// two collections) and samples every 10 ms until check. clients is the
// most attacker connections the test holds at once.
func watchHeap(t *testing.T, clients int) *heapWatch {
	h := &heapWatch{t: t, clients: clients, stop: make(chan struct{}), done: make(chan struct{})}
	h.gc = debug.SetGCPercent(attackGCPercent)
	h.baseline = heapAlloc()
	go func() {
		defer close(h.done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		raise := func(peak *atomic.Uint64, v uint64) {
			for p := peak.Load(); v > p && !peak.CompareAndSwap(p, v); p = peak.Load() {
			}
		}
		for {
			runtime.ReadMemStats(&ms)
			metrics.Read(live)
			raise(&h.peakAlloc, ms.HeapAlloc)
			if live[0].Value.Kind() == metrics.KindUint64 {
				raise(&h.peakLive, live[0].Value.Uint64())
			}
			select {
			case <-h.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return h
}

// check stops sampling and fails the test if the heap outgrew what the
// server may hold under cfg (MemoryBound) plus what this process's
// clients hold (attackClientConnBytes a connection, attackHarnessBytes),
// above the baseline.
//
// The live peak is the measure: a collection marks what is reachable when
// it starts plus what is allocated while it runs (at most the GC target's
// headroom, attackGCPercent), so it is held to the allowance plus that
// headroom, however loaded the machine. HeapAlloc, which includes garbage,
// may pass the GC target when collections run late on a loaded machine;
// it is held to twice the live limit, which a leak the size of the bound
// still breaks.
func (h *heapWatch) check(cfg Config) {
	h.t.Helper()
	close(h.stop)
	<-h.done
	debug.SetGCPercent(h.gc)
	bound := uint64(MemoryBound(cfg))
	clients := uint64(h.clients)*attackClientConnBytes + attackHarnessBytes
	liveLimit := (h.baseline + bound + clients) * (100 + attackGCPercent) / 100
	allocLimit := 2 * liveLimit
	live, alloc := h.peakLive.Load(), h.peakAlloc.Load()
	h.t.Logf("heap: baseline %.1f MiB; peak live %.1f MiB (limit %.1f), peak allocated %.1f MiB (limit %.1f); server bound %.1f MiB, clients %.1f MiB",
		mib(h.baseline), mib(live), mib(liveLimit), mib(alloc), mib(allocLimit), mib(bound), mib(clients))
	if live > liveLimit {
		h.t.Errorf("peak live heap %.1f MiB over the limit of %.1f MiB", mib(live), mib(liveLimit))
	}
	if alloc > allocLimit {
		h.t.Errorf("peak allocated heap %.1f MiB over the limit of %.1f MiB", mib(alloc), mib(allocLimit))
	}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// needLoopbackRange skips a test that dials from many 127.0.0.0/8 source
// addresses, which only Linux routes without configuration.
func needLoopbackRange(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("dialing from 127.x.y.z source addresses needs Linux")
	}
}

// attackIP returns the n-th source address of an attack in 127.b.0.0/16..
// (each /16 a netgroup of its own when spread is true).
func attackIP(base byte, n int, spread bool) string {
	if spread {
		return fmt.Sprintf("127.%d.%d.%d", int(base)+n/250, n%250, 1)
	}
	return fmt.Sprintf("127.%d.%d.%d", base, n/250, 1+n%250)
}

// rawPeer is an attacker's connection: a p2pclient.Conn with helpers that
// return errors rather than fail a test, so that any goroutine may use it.
type rawPeer struct {
	*p2pclient.Conn
	// conn is the underlying connection, for closing it.
	conn net.Conn
}

// dialRaw connects from ip.
func dialRaw(addr, ip string) (*rawPeer, error) {
	c, err := p2pclient.DialConn(context.Background(), addr, chaincfg.RegressionNetParams.Net, p2pclient.ConnOptions{LocalIP: ip, Timeout: ioTimeout})
	if err != nil {
		return nil, err
	}
	return &rawPeer{Conn: c, conn: c.NetConn()}, nil
}

// write sends raw bytes under a deadline.
func (p *rawPeer) write(b []byte) error {
	_ = p.SetWriteDeadline(time.Now().Add(ioTimeout))
	return p.WriteRaw(b)
}

// send writes msg as a frame.
func (p *rawPeer) send(msg wire.Message) error {
	_ = p.SetWriteDeadline(time.Now().Add(ioTimeout))
	return p.Send(msg)
}

// read reads one message, answering pings.
func (p *rawPeer) read(timeout time.Duration) (wire.Message, error) {
	_ = p.SetReadDeadline(time.Now().Add(timeout))
	return p.ReadMessage()
}

// readRaw reads one frame without decoding it, answering pings, and
// returns its command. Attackers that read blocks read them this way:
// wire's decoder borrows a 4 MiB script slab for each block and keeps up to
// 125 of them in a free list, so 120 clients decoding blocks in this
// process, where the heap is measured, would add up to 480 MiB to the
// server's holdings (how many depends on the scheduler, hence on the
// machine's load). Skip does not even read the payload into memory.
func (p *rawPeer) readRaw(timeout time.Duration) (string, error) {
	_ = p.SetReadDeadline(time.Now().Add(timeout))
	cmd, _, err := p.Skip()
	return cmd, err
}

// handshake sends version and, if verack, completes the handshake.
func (p *rawPeer) handshake(verack bool) error {
	me := wire.NewNetAddressIPPort(net.IPv4(127, 0, 0, 1), 0, 0)
	if err := p.send(wire.NewMsgVersion(me, me, 7, 0)); err != nil {
		return err
	}
	if !verack {
		return nil
	}
	for got := 0; got < 2; got++ {
		if _, err := p.read(ioTimeout); err != nil {
			return err
		}
	}
	return p.send(wire.NewMsgVerAck())
}

// closed reports whether the server has closed the connection, waiting
// up to timeout.
func (p *rawPeer) closed(timeout time.Duration) bool {
	_ = p.SetReadDeadline(time.Now().Add(timeout))
	err := p.DiscardAll()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// wellBehaved connects from ip, asks for filter headers and ten filters and
// checks the answers: the client the attacks must not lock out.
func wellBehaved(addr, ip string, view *fakeView, within time.Duration) error {
	p, err := dialRaw(addr, ip)
	if err != nil {
		return fmt.Errorf("well-behaved client: dial: %w", err)
	}
	defer p.conn.Close()
	if err := p.handshake(true); err != nil {
		return fmt.Errorf("well-behaved client: handshake: %w", err)
	}
	stop := view.at(100)
	if err := p.send(wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 1, &stop.hash)); err != nil {
		return err
	}
	if err := p.send(wire.NewMsgGetCFilters(wire.GCSFilterRegular, 91, &stop.hash)); err != nil {
		return err
	}
	deadline := time.Now().Add(within)
	var headers, filters int
	for headers < 1 || filters < 10 {
		m, err := p.read(time.Until(deadline))
		if err != nil {
			return fmt.Errorf("well-behaved client: after %d cfheaders and %d cfilters: %w", headers, filters, err)
		}
		switch m := m.(type) {
		case *wire.MsgCFHeaders:
			if len(m.FilterHashes) != 100 {
				return fmt.Errorf("well-behaved client: %d filter hashes", len(m.FilterHashes))
			}
			headers++
		case *wire.MsgCFilter:
			if m.BlockHash != view.at(91+uint32(filters)).hash {
				return fmt.Errorf("well-behaved client: cfilter %d out of order", filters)
			}
			filters++
		}
	}
	return nil
}

// runAttackers runs n attackers until ctx ends, each running attack in a
// loop (a new connection each round, from the address of ip(i, round)).
func runAttackers(ctx context.Context, n int, attack func(ctx context.Context, i, round int)) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; ctx.Err() == nil; round++ {
				attack(ctx, i, round)
			}
		}()
	}
	return &wg
}

// holdFor keeps p open, reading nothing, for d or until ctx ends.
func holdFor(ctx context.Context, p *rawPeer, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	_ = p.conn.Close()
}

// Huge declared counts in tx/inv/getdata/notfound/headers/addr (and the
// rest), before and after the handshake, from many connections: nothing is
// allocated beyond the bytes sent; misbehaviour after the handshake
// discourages the address.
func TestAttackHugeDeclaredCounts(t *testing.T) {
	needLoopbackRange(t)
	view := newFakeView(200, 101)
	cfg := attackConfig(view, 40)
	cfg.Relay, cfg.RelayTx = &fakeNode{}, true
	m := newCountingMetrics()
	cfg.Metrics = m
	srv := startServer(t, cfg)
	// After verack the first frame the server decodes ends the connection:
	// a malformed one (a count beyond the payload) discourages the
	// address, an invalid request (too many locators, BIP-37 without
	// peerbloomfilters) only disconnects, and discarded commands (headers,
	// addr, block, ...) do neither. Each attacker's round starts one frame
	// further, so every kind comes first now and then, and the first round
	// starts with a malformed getdata, so that an address is discouraged
	// however few rounds a loaded machine gets through.
	payloads := attackwire.HugeCountPayloads()
	names := slices.Sorted(maps.Keys(payloads))
	first := slices.Index(names, "getdata of 50,000 entries")
	names = append(names[first:], names[:first]...)
	frames := make([][]byte, len(names))
	for k, name := range names {
		frames[k] = rawFrame(attackwire.CommandOf(name), payloads[name])
	}
	rotated := func(k int) []byte {
		k %= len(frames)
		return bytes.Join(append(slices.Clone(frames[k:]), frames[:k]...), nil)
	}

	heap := watchHeap(t, 17)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var sent atomic.Int64
	wg := runAttackers(ctx, 16, func(ctx context.Context, i, round int) {
		p, err := dialRaw(srv.addr, attackIP(1, i*1000+round, false))
		if err != nil {
			return
		}
		defer p.conn.Close()
		if err := p.handshake(i%2 == 0); err != nil {
			return
		}
		// Before verack every frame is discarded: keep sending until the
		// handshake times out or the attack ends. After verack the first
		// decoded one ends the connection. Every round sends at least once.
		all := rotated(i/2 + round)
		for {
			if p.write(all) != nil {
				return
			}
			sent.Add(int64(len(all)))
			if ctx.Err() != nil {
				return
			}
		}
	})
	if err := wellBehaved(srv.addr, "127.200.0.1", view, ioTimeout); err != nil {
		t.Error(err)
	}
	wg.Wait()
	heap.check(cfg)
	// The server reads what was sent before the attack ended at its pace.
	waitFor(t, "a misbehaving address discouraged", ioTimeout, func() bool { return m.count("discouraged") > 0 })
	t.Logf("%.1f MiB of frames declaring huge counts sent; %d addresses discouraged", mib(uint64(sent.Load())), m.count("discouraged"))
	if err := wellBehaved(srv.addr, "127.200.0.2", view, ioTimeout); err != nil {
		t.Error(err)
	}
}

// Peers pipeline getcfilters for 1,000 mainnet-size (25 KB) filters and
// never read: each holds at most its send budget, the server-wide budget
// caps them together, and they are disconnected once stalled.
func TestAttackPipelinedGetCFiltersNeverRead(t *testing.T) {
	needLoopbackRange(t)
	view := newFakeViewFilters(1100, 102, 25_000)
	cfg := attackConfig(view, 40)
	m := newCountingMetrics()
	cfg.Metrics = m
	srv := startServer(t, cfg)
	stop := view.at(999)
	req := wire.NewMsgGetCFilters(wire.GCSFilterRegular, 0, &stop.hash)

	heap := watchHeap(t, 21)
	// On a loaded machine the server takes longer to fill a peer's socket
	// and see it stall: the attack and each hold stretch with the load.
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(3*time.Second))
	defer cancel()
	hold := testtime.Scale(2 * cfg.SendStallTimeout)
	wg := runAttackers(ctx, 20, func(ctx context.Context, i, round int) {
		p, err := dialRaw(srv.addr, attackIP(2, i*1000+round, false))
		if err != nil {
			return
		}
		if err := p.handshake(true); err != nil {
			_ = p.conn.Close()
			return
		}
		for range 20 {
			if p.send(req) != nil {
				break
			}
		}
		holdFor(ctx, p, hold) // never reads an answer
	})
	// The well-behaved client reads all 1,000 filters (25 MB).
	client := connectFrom(t, srv.addr, "127.200.0.3")
	client.send(req)
	for h := uint32(0); h <= 999; h++ {
		cf, ok := client.read().(*wire.MsgCFilter)
		if !ok || cf.BlockHash != view.at(h).hash {
			t.Fatalf("well-behaved client: filter %d missing", h)
		}
	}
	wg.Wait()
	heap.check(cfg)
	// The server counts a stall once the stalled peer's goroutines have
	// ended, which may be after its attacker has hung up.
	waitFor(t, "a peer disconnected for not reading", ioTimeout, func() bool { return m.count("stalled") > 0 })
	t.Logf("%d peers disconnected for not reading", m.count("stalled"))
	if err := wellBehaved(srv.addr, "127.200.0.4", view, ioTimeout); err != nil {
		t.Error(err)
	}
}

// 16 addresses in 8 netgroups take every slot and behave (they answer
// pings and ask for headers now and then): a client from a fresh address
// still gets in, by eviction, and stays while the hogs keep reconnecting.
func TestAttackSlotsFilledThenFreshClient(t *testing.T) {
	needLoopbackRange(t)
	view := newFakeView(200, 103)
	cfg := attackConfig(view, 32)
	cfg.MaxPeersPerIP = 2
	cfg.MaxPeersPerSubnet = 8
	m := newCountingMetrics()
	cfg.Metrics = m
	srv := startServer(t, cfg)

	heap := watchHeap(t, 33)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	hog := func(ip string) {
		defer wg.Done()
		for ctx.Err() == nil {
			p, err := dialRaw(srv.addr, ip)
			if err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			if p.handshake(true) == nil {
				// Stay, answering pings, until evicted or the test ends.
				stop := context.AfterFunc(ctx, func() { _ = p.conn.Close() })
				for {
					if _, err := p.read(time.Minute); err != nil {
						break
					}
				}
				stop()
			}
			_ = p.conn.Close()
			time.Sleep(20 * time.Millisecond)
		}
	}
	for i := range 16 {
		ip := fmt.Sprintf("127.%d.0.%d", 10+i/2, 1+i%2) // 8 netgroups of 2 addresses
		wg.Add(2)
		go hog(ip)
		go hog(ip)
	}
	waitFor(t, "every slot taken", ioTimeout, func() bool { return srv.PeerCount() == cfg.MaxPeers })

	client := connectFrom(t, srv.addr, "127.201.0.1")
	client.send(wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 0, &view.at(50).hash))
	if got := client.sync(); len(got) != 1 {
		t.Fatalf("fresh client: %d answers", len(got))
	}
	if m.count("evicted") == 0 {
		t.Fatal("fresh client admitted without an eviction")
	}
	// The evicted hogs reconnect, each evicting a hog (or refused), again
	// and again: the client stays and is served.
	const reconnects = 16
	attempts := func() int { return m.count("evicted") + m.refusals("full") }
	joined := attempts()
	waitFor(t, fmt.Sprintf("%d hog reconnections after the client's", reconnects), ioTimeout, func() bool { return attempts() >= joined+reconnects })
	client.send(wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 0, &view.at(60).hash))
	if got := client.sync(); len(got) != 1 {
		t.Fatalf("fresh client after the hogs reconnected: %d answers", len(got))
	}
	cancel()
	wg.Wait()
	heap.check(cfg)
	t.Logf("%d evictions, %d refusals", m.count("evicted"), m.refusals("full"))
}

// fakeRPCNode answers getblock (verbosity 0) and getbestblockhash like
// Bitcoin Core, including its RPC work queue: rpcThreads requests served
// at once, rpcQueue more waiting, any beyond answered 503.
type fakeRPCNode struct {
	blocks  map[string]string // hash → hex
	tip     string
	workers chan struct{}
	queue   int64
	delay   time.Duration

	inQueue      atomic.Int64
	getblockNow  atomic.Int64
	getblockPeak atomic.Int64
	rejected     atomic.Int64
	served       atomic.Int64
}

func (n *fakeRPCNode) resetPeak() { n.getblockPeak.Store(0) }

func (n *fakeRPCNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if n.inQueue.Add(1) > n.queue+int64(cap(n.workers)) {
		n.inQueue.Add(-1)
		n.rejected.Add(1)
		http.Error(w, "Work queue depth exceeded", http.StatusServiceUnavailable)
		return
	}
	defer n.inQueue.Add(-1)
	n.workers <- struct{}{}
	defer func() { <-n.workers }()
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params []any           `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	reply := func(result any, rpcErr any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"result": result, "error": rpcErr, "id": req.ID})
	}
	switch req.Method {
	case "getbestblockhash":
		reply(n.tip, nil)
	case "getblock":
		now := n.getblockNow.Add(1)
		for p := n.getblockPeak.Load(); now > p && !n.getblockPeak.CompareAndSwap(p, now); p = n.getblockPeak.Load() {
		}
		time.Sleep(n.delay)
		n.getblockNow.Add(-1)
		hash, _ := req.Params[0].(string)
		if hexBlock, ok := n.blocks[hash]; ok {
			n.served.Add(1)
			reply(hexBlock, nil)
			return
		}
		reply(nil, map[string]any{"code": -5, "message": "Block not found"})
	default:
		reply(nil, map[string]any{"code": -32601, "message": "Method not found"})
	}
}

// 120 peers ask for random blocks while the indexer's own client keeps
// calling the node: peers' fetches go through a client of their own and
// the server's gate (one at a time while the indexer is busy), so the
// node's work queue never overflows and the indexer's calls all succeed.
func TestAttackBlockRequestsDoNotStarveIndexer(t *testing.T) {
	needLoopbackRange(t)
	view := newFakeView(300, 104)
	node := &fakeRPCNode{blocks: map[string]string{}, tip: view.at(299).hash.String(),
		workers: make(chan struct{}, 4), queue: 4, delay: 5 * time.Millisecond}
	for h := uint32(0); h < 300; h++ {
		var buf bytes.Buffer
		_ = blockFor(view.at(h)).Serialize(&buf)
		node.blocks[view.at(h).hash.String()] = hex.EncodeToString(buf.Bytes())
	}
	httpSrv := httptest.NewServer(node)
	defer httpSrv.Close()
	host := strings.TrimPrefix(httpSrv.URL, "http://")
	newClient := func(maxConns int) *nodeclient.Client {
		c, err := nodeclient.NewClient(nodeclient.Config{Host: host, User: "u", Password: "p", MaxConns: maxConns}, testLogger())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	indexerClient := newClient(0)

	cfg := attackConfig(view, 130)
	const fetches = 2
	cfg.MaxBlockFetches = fetches
	var busy atomic.Bool
	busy.Store(true)
	cfg.IndexerBusy = busy.Load
	cfg.Blocks = nodeBlocks{newClient(fetches + 1)}
	srv := startServer(t, cfg)

	heap := watchHeap(t, 130)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var indexerCalls, indexerErrs atomic.Int64
	indexerDone := make(chan struct{})
	go func() {
		defer close(indexerDone)
		for ctx.Err() == nil {
			var tip string
			err := indexerClient.Call(ctx, "getbestblockhash", nil, &tip)
			if ctx.Err() != nil {
				return
			}
			indexerCalls.Add(1)
			if err != nil || tip != node.tip {
				indexerErrs.Add(1)
				t.Logf("indexer call failed: %v", err)
			}
		}
	}()
	var blocksServed atomic.Int64
	wg := runAttackers(ctx, 120, func(ctx context.Context, i, round int) {
		p, err := dialRaw(srv.addr, attackIP(30, i, true))
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			return
		}
		defer p.conn.Close()
		stop := context.AfterFunc(ctx, func() { _ = p.conn.Close() })
		defer stop()
		if p.handshake(true) != nil {
			return
		}
		rng := uint64(i*7919 + round)
		for ctx.Err() == nil {
			rng = rng*6364136223846793005 + 1442695040888963407
			gd := wire.NewMsgGetData()
			_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeWitnessBlock, &view.at(uint32(rng>>33)%300).hash))
			if p.send(gd) != nil {
				return
			}
			if cmd, err := p.readRaw(ioTimeout); err != nil {
				return
			} else if cmd == wire.CmdBlock {
				blocksServed.Add(1)
			}
		}
	})
	// Each phase lasts at least 1.5 s and until the node has served
	// phaseFetches blocks in it, so that its fetch limit is put to the
	// test however loaded the machine.
	const phase, phaseFetches = 1500 * time.Millisecond, 20
	runPhase := func(name string) {
		t.Helper()
		start := node.served.Load()
		time.Sleep(phase)
		waitFor(t, fmt.Sprintf("%d blocks fetched from the node %s", phaseFetches, name), ioTimeout,
			func() bool { return node.served.Load() >= start+phaseFetches })
	}
	runPhase("while the indexer is busy")
	busyPeak := node.getblockPeak.Load()
	busy.Store(false) // caught up: peers may use every slot
	node.resetPeak()
	// A well-behaved client gets a block too.
	client := connectFrom(t, srv.addr, "127.202.0.1")
	gd := wire.NewMsgGetData()
	_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeWitnessBlock, &view.at(123).hash))
	client.send(gd)
	if blk, ok := client.read().(*wire.MsgBlock); !ok || blk.BlockHash() != view.at(123).hash {
		t.Fatal("well-behaved client: no block")
	}
	runPhase("after the indexer caught up")
	cancel()
	wg.Wait()
	<-indexerDone
	heap.check(cfg)
	t.Logf("%d blocks served to 120 peers; indexer made %d calls, %d failed; node fetches at once: %d while busy, %d after; 503s: %d",
		blocksServed.Load(), indexerCalls.Load(), indexerErrs.Load(), busyPeak, node.getblockPeak.Load(), node.rejected.Load())
	if indexerErrs.Load() != 0 || node.rejected.Load() != 0 {
		t.Errorf("the node rejected %d requests; %d of the indexer's calls failed", node.rejected.Load(), indexerErrs.Load())
	}
	if indexerCalls.Load() < 10 {
		t.Errorf("the indexer made only %d calls", indexerCalls.Load())
	}
	if busyPeak > 1 || node.getblockPeak.Load() > fetches {
		t.Errorf("node fetches at once: %d while the indexer was busy (limit 1), %d after (limit %d)", busyPeak, node.getblockPeak.Load(), fetches)
	}
	if blocksServed.Load() == 0 {
		t.Error("no block served to the attackers at all")
	}
	if err := wellBehaved(srv.addr, "127.202.0.2", view, ioTimeout); err != nil {
		t.Error(err)
	}
}

// One 50,000-entry inv after another with relay on, from many peers: the
// server asks for at most maxTxRequests of them per peer (linear work per
// inv, TestInvHandlingIsLinear), large invs beyond the receive budget are
// discarded unread, and everyone else is served.
//
// Each inv is followed by a notfound (a small frame, never subject to the
// receive budget) for the first hashes the server asks for, so that every
// inv the server handles is answered with one getdata: the getdata frames
// the server has sent count the invs it has handled, a number that only
// grows. (Received invs minus discarded ones does not: a discarded frame is
// counted received a moment before it is counted discarded, and a frame cut
// off when its peer hangs up counts as received.)
func TestAttackHugeInvWithRelay(t *testing.T) {
	needLoopbackRange(t)
	view := newFakeView(200, 105)
	cfg := attackConfig(view, 40)
	cfg.Relay, cfg.RelayTx = &fakeNode{}, true
	cfg.RecvBudget = 4 << 20 // two 1.8 MB invs at a time
	m := newCountingMetrics()
	cfg.Metrics = m
	srv := startServer(t, cfg)
	txHash := func(i int) *chainhash.Hash { return &chainhash.Hash{byte(i), byte(i >> 8), byte(i >> 16), 5} }
	inv := wire.NewMsgInv()
	for i := range wire.MaxInvPerMsg {
		_ = inv.AddInvVect(wire.NewInvVect(wire.InvTypeWitnessTx, txHash(i)))
	}
	// The server asks for the inv's first unrequested hashes, in order:
	// forgetting the first notFound of them lets the next inv's getdata ask
	// for them again.
	const notFound = (msgread.MaxSmallFrame - 3) / msgread.InvVectSize
	nf := wire.NewMsgNotFound()
	for i := range notFound {
		_ = nf.AddInvVect(wire.NewInvVect(wire.InvTypeWitnessTx, txHash(i)))
	}
	var frames []byte
	for _, msg := range []wire.Message{inv, nf} {
		frame, err := encodeFrame(msg, wire.ProtocolVersion, chaincfg.RegressionNetParams.Net, wire.BaseEncoding)
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, frame...)
	}

	heap := watchHeap(t, 11)
	// The flood lasts at least 2 s and until the server has handled
	// minHandled invs (or a limit the test time scale stretches): what is
	// checked is that large invs are handled at all under the flood, not
	// how many a loaded machine gets through in a fixed window.
	const minHandled = 10
	handledInvs := func() int { n, _ := m.sentOf(wire.CmdGetData); return n }
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(time.Minute))
	defer cancel()
	go func() {
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
		}
		for ctx.Err() == nil && handledInvs() < minHandled {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	var invs atomic.Int64
	wg := runAttackers(ctx, 10, func(ctx context.Context, i, round int) {
		p, err := dialRaw(srv.addr, attackIP(40, i*1000+round, false))
		if err != nil {
			return
		}
		defer p.conn.Close()
		stop := context.AfterFunc(ctx, func() { _ = p.conn.Close() })
		defer stop()
		if p.handshake(true) != nil {
			return
		}
		go func() { _ = p.DiscardAll() }() // read (and drop) the getdata answers; sends touch only the write side
		for ctx.Err() == nil {
			if p.write(frames) != nil {
				return
			}
			invs.Add(1)
		}
	})
	if err := wellBehaved(srv.addr, "127.203.0.1", view, ioTimeout); err != nil {
		t.Error(err)
	}
	wg.Wait()
	heap.check(cfg)
	handled, getdataBytes := m.sentOf(wire.CmdGetData)
	dropped := m.count("large_frame_dropped")
	t.Logf("%d invs of 50,000 entries sent, %d handled (answered with a getdata), %d discarded for the receive budget", invs.Load(), handled, dropped)
	if handled < minHandled {
		t.Errorf("only %d invs handled", handled)
	}
	// A getdata asks for at most maxTxRequests transactions.
	if limit := handled * (wireframe.HeaderSize + 3 + maxTxRequests*msgread.InvVectSize); getdataBytes > limit {
		t.Errorf("%d getdata messages of %d bytes: more than %d transactions asked for in one", handled, getdataBytes, maxTxRequests)
	}
	if dropped == 0 {
		t.Error("no inv discarded for the receive budget")
	}
}

// Peers send 3.9 MB of a 4 MB tx frame and stall, to a server with relay
// off and one with relay on at once. With relay off the payload is
// discarded as it arrives; with relay on one frame at a time fits the
// receive budget and the rest are discarded; either way a stalled sender
// is cut off by the minimum transfer rate within seconds, not held for
// the idle timeout.
func TestAttackPartialLargeTxFrames(t *testing.T) {
	needLoopbackRange(t)
	const frameLen, sentLen, peers = 4_000_000, 3_900_000, 24
	partial := append(rawHeader(chaincfg.RegressionNetParams.Net, "tx", frameLen), make([]byte, sentLen)...)
	type target struct {
		cfg Config
		srv *testServer
		m   *countingMetrics
		cut chan time.Duration
	}
	var targets []*target
	for _, relay := range []bool{false, true} {
		view := newFakeView(200, 106)
		cfg := attackConfig(view, 40)
		cfg.MinRecvRate = 4 << 20 // 4 MB in about a second, plus the grace
		if relay {
			cfg.Relay, cfg.RelayTx = &fakeNode{}, true
			cfg.RecvBudget = 4 << 20
		}
		tg := &target{m: newCountingMetrics(), cut: make(chan time.Duration, peers)}
		cfg.Metrics = tg.m
		tg.cfg, tg.srv = cfg, startServer(t, cfg)
		targets = append(targets, tg)
	}

	heap := watchHeap(t, 50)
	var wg sync.WaitGroup
	for ti, tg := range targets {
		for i := range peers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p, err := dialRaw(tg.srv.addr, attackIP(byte(50+ti), i, false))
				if err != nil {
					return
				}
				defer p.conn.Close()
				if p.handshake(true) != nil || p.write(partial) != nil {
					return
				}
				start := time.Now()
				if p.closed(3 * (msgread.LargeFrameGrace + time.Second)) {
					tg.cut <- time.Since(start)
				}
			}()
		}
	}
	for ti, tg := range targets {
		if err := wellBehaved(tg.srv.addr, fmt.Sprintf("127.204.%d.1", ti), tg.srv.view, ioTimeout); err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
	// Both servers run in this process: the limit is the sum of their
	// bounds, near enough.
	both := targets[1].cfg
	both.MaxPeers += targets[0].cfg.MaxPeers
	both.RecvBudget += targets[0].cfg.RecvBudget
	both.SendBudget += targets[0].cfg.SendBudget
	heap.check(both)
	for ti, tg := range targets {
		close(tg.cut)
		var n int
		var longest time.Duration
		for d := range tg.cut {
			n++
			longest = max(longest, d)
		}
		t.Logf("relay %v: %d of %d stalled senders cut off, the last after %v; %d frames discarded for the receive budget",
			ti == 1, n, peers, longest, tg.m.count("large_frame_dropped"))
		if n != peers {
			t.Errorf("relay %v: %d of %d stalled senders cut off", ti == 1, n, peers)
		}
		if ti == 1 && tg.m.count("large_frame_dropped") == 0 {
			t.Error("relay on: no frame discarded although the receive budget holds one")
		}
		if err := wellBehaved(tg.srv.addr, fmt.Sprintf("127.204.%d.2", ti), tg.srv.view, ioTimeout); err != nil {
			t.Error(err)
		}
	}
}

// One invalid request from each of many addresses, then a fresh connection
// from the same address: served at once (no penalty, unlike the hour-long
// ban of old). A misbehaving address is discouraged: admitted only while
// slots are free, and the first evicted.
func TestAttackInvalidRequestThenReconnect(t *testing.T) {
	needLoopbackRange(t)
	view := newFakeView(2500, 107)
	cfg := attackConfig(view, 40)
	m := newCountingMetrics()
	cfg.Metrics = m
	srv := startServer(t, cfg)

	heap := watchHeap(t, 45)
	invalid := []wire.Message{
		wire.NewMsgGetCFilters(wire.GCSFilterRegular, 0, &view.at(1000).hash), // 1,001 blocks
		wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 11, &view.at(10).hash), // start above stop
		wire.NewMsgGetCFCheckpt(7, &view.at(10).hash),                         // unknown filter type
		wire.NewMsgMemPool(),
	}
	for i := range 30 {
		ip := attackIP(60, i, false)
		p, err := dialRaw(srv.addr, ip)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.handshake(true); err != nil {
			t.Fatal(err)
		}
		if err := p.send(invalid[i%len(invalid)]); err != nil {
			t.Fatal(err)
		}
		if !p.closed(ioTimeout) {
			t.Fatalf("address %s not disconnected for an invalid request", ip)
		}
		_ = p.conn.Close()
		if err := wellBehaved(srv.addr, ip, view, ioTimeout); err != nil {
			t.Fatalf("same address %s after an invalid request: %v", ip, err)
		}
	}
	// The server counts a disconnect just after the connection closes.
	waitFor(t, "30 invalid-request disconnects counted", ioTimeout, func() bool { return m.disconnects("invalid_request") >= 30 })
	if m.count("discouraged") != 0 || m.disconnects("invalid_request") != 30 {
		t.Fatalf("%d discouraged, %d invalid-request disconnects", m.count("discouraged"), m.disconnects("invalid_request"))
	}

	// Misbehaviour discourages: the address still gets in while slots are
	// free (two or more), and is evicted first once the server is full.
	bad := "127.61.0.1"
	p, _ := dialRaw(srv.addr, bad)
	_ = p.handshake(true)
	_ = p.write(rawFrame(wire.CmdGetData, []byte{0xfe, 0x50, 0xc3, 0x00, 0x00})) // 50,000 entries in 5 bytes
	if !p.closed(ioTimeout) {
		t.Fatal("misbehaving peer not disconnected")
	}
	waitFor(t, "discouraged", ioTimeout, func() bool { return m.count("discouraged") == 1 })
	// The server frees a slot only once it sees the connection end; the
	// count of free slots below must not include the earlier clients'.
	waitFor(t, "every earlier connection's slot freed", ioTimeout, func() bool { return srv.ConnCount() == 0 })
	// An older peer shares the discouraged address's netgroup, so that
	// netgroup diversity (which protects one peer per netgroup, chosen by a
	// secret hash) protects that one and not the discouraged peer.
	fill := []*rawClient{connectFrom(t, srv.addr, "127.61.0.2")}
	for i := 0; srv.ConnCount() < cfg.MaxPeers-2; i++ {
		fill = append(fill, connectFrom(t, srv.addr, fmt.Sprintf("127.%d.0.1", 70+i)))
	}
	again := connectFrom(t, srv.addr, bad) // two slots free: admitted
	waitFor(t, "discouraged peer admitted", ioTimeout, func() bool { return srv.ConnCount() == cfg.MaxPeers-1 })
	if _, err := tryConnectFrom(t, srv.addr, bad); err == nil {
		t.Fatal("discouraged address admitted with one slot free")
	}
	fill = append(fill, connectFrom(t, srv.addr, "127.63.0.1"))
	newcomer := connectFrom(t, srv.addr, "127.205.0.1")
	again.keepPings = true
	again.expectDisconnect() // evicted first
	newcomer.send(wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 0, &view.at(20).hash))
	if got := newcomer.sync(); len(got) != 1 {
		t.Fatalf("newcomer: %d answers", len(got))
	}
	heap.check(cfg)
	t.Logf("%d connections kept while the discouraged peer was evicted", len(fill))
}

// tryConnectFrom dials from ip and completes the handshake, or reports why
// not (a refused connection is closed before the server's version).
func tryConnectFrom(t *testing.T, addr, ip string) (*rawPeer, error) {
	p, err := dialRaw(addr, ip)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = p.conn.Close() })
	return p, p.handshake(true)
}
