package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/rs/zerolog"
)

// ioDeadline bounds every single network operation of these tests; it is
// generous because the machine may be busy.
const ioDeadline = 20 * time.Second

// liveServer is a Server serving on a loopback listener for one test.
type liveServer struct {
	*Server
	addr string
}

// serveLive runs a server for v with cfg on 127.0.0.1:0 until the test
// ends, and fails the test if Serve returns early.
func serveLive(t *testing.T, v ChainView, cfg Config, log zerolog.Logger) *liveServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveLiveOn(t, v, cfg, log, ln)
}

// serveLiveOn is serveLive on a listener of the test's own.
func serveLiveOn(t *testing.T, v ChainView, cfg Config, log zerolog.Logger, ln net.Listener) *liveServer {
	t.Helper()
	s, err := New(cfg, v, newTestMetrics(), log)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("Serve did not return after cancel")
		}
	})
	return &liveServer{Server: s, addr: ln.Addr().String()}
}

// alive fails the test if the server no longer answers /healthz from a
// fresh address.
func (ls *liveServer) alive(t *testing.T, from string) {
	t.Helper()
	if code, _, err := ls.get(from, "/healthz"); err != nil || code != 200 {
		t.Fatalf("fresh client %s: /healthz %d, %v", from, code, err)
	}
}

// dialFrom connects to addr from the loopback address ip (any of
// 127.0.0.0/8 stands in for a host of its own).
func dialFrom(ip, addr string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: ioDeadline}
	return d.Dial("tcp", addr)
}

// get sends one GET from ip on a new connection and returns the status
// and body.
func (ls *liveServer) get(ip, path string) (int, []byte, error) {
	c, err := dialFrom(ip, ls.addr)
	if err != nil {
		return 0, nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(ioDeadline))
	resp, err := roundTrip(c, bufio.NewReader(c), path, true)
	if err != nil {
		return 0, nil, err
	}
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// download is get that counts the body instead of keeping it.
func (ls *liveServer) download(ip, path string) (int, int64, error) {
	c, err := dialFrom(ip, ls.addr)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(ioDeadline))
	resp, err := roundTrip(c, bufio.NewReader(c), path, true)
	if err != nil {
		return 0, 0, err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, n, err
}

// roundTrip writes a GET for path on c and reads the response head.
func roundTrip(c net.Conn, br *bufio.Reader, path string, closeAfter bool) (*http.Response, error) {
	conn := ""
	if closeAfter {
		conn = "Connection: close\r\n"
	}
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: cfindexd\r\n%s\r\n", path, conn); err != nil {
		return nil, err
	}
	return http.ReadResponse(br, nil)
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd on this system")
	}
	return len(fds)
}

// metric reads a metric the server reported (a scrape of /metrics reads
// the tip, which some test views block).
func (ls *liveServer) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	return ls.testMetrics().value(name, labels...)
}

// hostAddr returns a distinct loopback address for the i-th stand-in host.
func hostAddr(subnet, i int) string {
	return fmt.Sprintf("127.%d.%d.%d", subnet, 1+i/250, 1+i%250)
}

// TestConnCapsKeepFreshClientServed opens far more connections than the
// caps allow, first from one address and then from hundreds, some idle
// between keep-alive requests and some that never send a request: a fresh
// client from a new address is answered each time, the server's open
// connections never exceed MaxConns, and this process's file descriptors
// grow by no more than the client sockets the test holds plus MaxConns.
func TestConnCapsKeepFreshClientServed(t *testing.T) {
	const maxConns, perAddr = 24, 4
	ls := serveLive(t, recordedView(t), Config{
		MaxConns: maxConns, MaxConnsPerAddr: perAddr,
		IdleTimeout: MaxIdleTimeout, ReadHeaderTimeout: time.Minute, // attackers stay until evicted
	}, zerolog.Nop())
	ls.alive(t, "127.1.0.1")
	fdsBefore := openFDs(t)
	var held []net.Conn // the attackers' sockets, kept open
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	statuses := map[string]int{}
	attack := func(ip string, idleKeepAlive bool) {
		t.Helper()
		c, err := dialFrom(ip, ls.addr)
		if err != nil {
			t.Fatalf("dial from %s: %v", ip, err)
		}
		held = append(held, c)
		if !idleKeepAlive {
			statuses["silent"]++
			return // connected, never sends a request
		}
		_ = c.SetDeadline(time.Now().Add(ioDeadline))
		resp, err := roundTrip(c, bufio.NewReader(c), "/healthz", false)
		if err != nil {
			statuses["reset"]++ // refused, and the close raced the answer
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		statuses[resp.Status]++
	}
	check := func(phase, fresh string) {
		t.Helper()
		ls.alive(t, fresh)
		if open := ls.metric(t, "cfindexd_http_connections_open"); open > maxConns {
			t.Fatalf("%s: %v connections open, cap %d", phase, open, maxConns)
		}
		fds := openFDs(t)
		if grown := fds - fdsBefore; grown > len(held)+maxConns+16 {
			t.Fatalf("%s: %d more file descriptors with %d client sockets held and a cap of %d", phase, grown, len(held), maxConns)
		}
		t.Logf("%s: fresh client answered; fds %d -> %d with %d client sockets held; client saw %v",
			phase, fdsBefore, fds, len(held), statuses)
	}

	// One host: 150 idle keep-alive connections, then 50 silent ones.
	for range 150 {
		attack("127.1.1.1", true)
	}
	for range 50 {
		attack("127.1.1.1", false)
	}
	check("one address", "127.1.1.2")
	if ev := ls.metric(t, "cfindexd_http_connections_evicted_total", "cap", "per_address"); ev < 150 {
		t.Fatalf("%v evictions for the per-address cap, want every connection beyond %d", ev, perAddr)
	}

	// Many hosts, one connection each, half idle and half silent.
	for i := range 400 {
		attack(hostAddr(2, i), i%2 == 0)
	}
	check("many addresses", "127.3.0.1")
	if ev := ls.metric(t, "cfindexd_http_connections_evicted_total", "cap", "total"); ev < 400-maxConns {
		t.Fatalf("%v evictions for the total cap", ev)
	}
}

// blockingView blocks Tip until release is closed, counting the callers it
// holds: it keeps /bulk/index.json requests busy.
type blockingView struct {
	*fakeView
	release chan struct{}
	waiting atomic.Int32
}

func (b *blockingView) Tip() (Tip, bool) {
	b.waiting.Add(1)
	<-b.release
	return b.fakeView.Tip()
}

// TestBusyServerRefusesAtAccept fills every connection slot with requests
// in progress, each alone in its network, which are never closed to make
// room: further connections are answered 503 "too many connections" and
// closed in the accept loop, without a goroutine or a file descriptor
// each, and the server serves again once the requests finish.
func TestBusyServerRefusesAtAccept(t *testing.T) {
	const maxConns = 8
	v := &blockingView{fakeView: recordedView(t), release: make(chan struct{})}
	ls := serveLive(t, v, Config{MaxConns: maxConns, MaxConnsPerAddr: maxConns}, zerolog.Nop())
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(v.release) }) }
	t.Cleanup(release) // before the server's shutdown, which waits for them
	busy := make(chan int, maxConns)
	for i := range maxConns {
		go func() {
			code, _, err := ls.get(fmt.Sprintf("127.%d.0.1", 40+i), "/bulk/index.json")
			if err != nil {
				code = -1
			}
			busy <- code
		}()
	}
	deadline := time.Now().Add(ioDeadline)
	for v.waiting.Load() < maxConns {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests reached the handler", v.waiting.Load(), maxConns)
		}
		time.Sleep(10 * time.Millisecond)
	}
	goroutines, fds := runtime.NumGoroutine(), openFDs(t)
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	refused := 0
	for i := range 200 {
		c, err := dialFrom(hostAddr(5, i), ls.addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		_ = c.SetDeadline(time.Now().Add(ioDeadline))
		resp, err := roundTrip(c, bufio.NewReader(c), "/healthz", false)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 503 || string(b) != "too many connections\n" || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("connection over the cap: %d %q", resp.StatusCode, b)
			}
			refused++
		}
	}
	if g := runtime.NumGoroutine(); g > goroutines+10 {
		t.Fatalf("goroutines %d -> %d while refusing 200 connections", goroutines, g)
	}
	if f := openFDs(t); f > fds+len(held)+10 {
		t.Fatalf("fds %d -> %d with %d client sockets held", fds, f, len(held))
	}
	if n := ls.metric(t, "cfindexd_http_connections_refused_total", "cap", "total"); n != 200 {
		t.Fatalf("refused_total %v, want 200", n)
	}
	t.Logf("200 connections refused (%d read the 503, the rest a reset); goroutines %d, fds %d -> %d", refused, goroutines, fds, openFDs(t))
	release()
	for range maxConns {
		if code := <-busy; code != 200 {
			t.Fatalf("busy request: %d", code)
		}
	}
	ls.alive(t, "127.6.0.1")
}

// paddedView serves every filter padded to pad bytes, to make bulk filter
// files large without building large chains.
type paddedView struct {
	*fakeView
	pad int
}

func (p paddedView) FiltersByHeight(start, end uint32) ([]BlockRecord, error) {
	recs, err := p.fakeView.FiltersByHeight(start, end)
	return padFilters(recs, p.pad), err
}

// Read hands fn a padded reader too: a bulk download reads its first chunk
// from a snapshot.
func (p paddedView) Read(fn func(ChainReader) error) error {
	return p.fakeView.Read(func(r ChainReader) error {
		return fn(paddedReader{ChainReader: r, pad: p.pad})
	})
}

// paddedReader is a paddedView snapshot.
type paddedReader struct {
	ChainReader
	pad int
}

func (p paddedReader) FiltersByHeight(start, end uint32) ([]BlockRecord, error) {
	recs, err := p.ChainReader.FiltersByHeight(start, end)
	return padFilters(recs, p.pad), err
}

// padFilters replaces each filter with pad bytes.
func padFilters(recs []BlockRecord, pad int) []BlockRecord {
	for i := range recs {
		recs[i].Filter = bytes.Repeat([]byte{byte(i)}, pad)
	}
	return recs
}

// TestSlowBulkReadersDoNotBlockFreshClient fills every bulk slot with
// downloads from four clients on two addresses that never read: a third
// download from one of those addresses is refused at once (per-address
// slots), a fresh client behind a third address of their /16 takes one
// slot over and downloads the whole file, the other slow downloads are cut
// after their socket buffers fill and a window of the minimum rate passes,
// and the heap stays within the budget of the slots.
func TestSlowBulkReadersDoNotBlockFreshClient(t *testing.T) {
	const (
		slots, perAddr = 4, 2
		pad            = 8 << 10
		blocks         = 2000
	)
	v := paddedView{fakeView: synthView(t, synthChain(t, blocks-1, 21)), pad: pad}
	ls := serveLive(t, v, Config{
		MaxBulkInFlight: slots, MaxBulkPerAddr: perAddr,
		BulkMinRate: 1 << 20, BulkMinRateWindow: 500 * time.Millisecond,
	}, zerolog.Nop())
	const path = "/bulk/filters/0.bin"
	fileLen := int64(blocks * (3 + pad)) // CompactSize 0xfd + 2 bytes, then the filter

	var peak atomic.Uint64
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()

	// Four slow readers: send the request, read nothing.
	var slow []net.Conn
	defer func() {
		for _, c := range slow {
			c.Close()
		}
	}()
	for _, ip := range []string{"127.7.0.1", "127.7.0.1", "127.7.0.2", "127.7.0.2"} {
		c, err := dialFrom(ip, ls.addr)
		if err != nil {
			t.Fatal(err)
		}
		slow = append(slow, c)
		if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: cfindexd\r\nConnection: close\r\n\r\n", path); err != nil {
			t.Fatal(err)
		}
	}
	// Wait until all four hold a slot: an address of their own is then
	// refused for its cap.
	deadline := time.Now().Add(ioDeadline)
	for ls.metric(t, "cfindexd_http_bulk_in_flight") < slots {
		if time.Now().After(deadline) {
			t.Fatal("the slow readers never filled the bulk slots")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code, _, _ := ls.get("127.7.0.9", "/bulk/index.json"); code != 200 {
		t.Fatalf("index while the bulk slots are full: %d", code)
	}
	code, b, err := ls.get("127.7.0.1", path)
	if err != nil || code != 503 || !strings.Contains(string(b), "your address") {
		t.Fatalf("third download from one address: %d %q %v", code, b, err)
	}

	// A fresh client retries until it gets the whole file (counted, not
	// kept, so the heap measures the server).
	began := time.Now()
	var got int64
	for attempt := 1; ; attempt++ {
		code, n, err := ls.download("127.7.0.3", path)
		if err == nil && code == 200 {
			got = n
			break
		}
		if time.Since(began) > 2*ioDeadline {
			t.Fatalf("fresh client still refused after %d attempts: %d %v", attempt, code, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	waited := time.Since(began)
	if got != fileLen {
		t.Fatalf("fresh client got %d bytes, want %d", got, fileLen)
	}
	// Every slow reader is cut, one taken over and the others for the
	// minimum rate (reading one that is not yet would let it finish), and
	// their bodies end early.
	for ls.metric(t, "cfindexd_http_slow_cut_total", "kind", "bulk") < slots-1 {
		if time.Since(began) > 2*ioDeadline {
			t.Fatalf("only %v slow downloads cut", ls.metric(t, "cfindexd_http_slow_cut_total", "kind", "bulk"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i, c := range slow {
		_ = c.SetReadDeadline(time.Now().Add(ioDeadline))
		n, err := io.Copy(io.Discard, c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("slow reader %d: still open after %d bytes", i, n)
		}
		if n >= fileLen {
			t.Fatalf("slow reader %d got the whole file (%d bytes)", i, n)
		}
	}
	close(stopSampling)
	<-sampled
	// Each download holds about three copies of one chunk of filters (the
	// records, the encoded buffer, the bytes in flight to the socket).
	budget := uint64(slots+1)*3*filtersChunk*pad + 16<<20
	grew := peak.Load() - min(peak.Load(), base)
	if grew > budget {
		t.Fatalf("heap grew by %d MB, budget %d MB", grew>>20, budget>>20)
	}
	t.Logf("fresh client served after %s; heap in use %d MB -> peak %d MB (budget +%d MB)",
		waited.Round(time.Millisecond), base>>20, peak.Load()>>20, budget>>20)
	ls.alive(t, "127.7.0.4")
}

// panicView panics in FilterByHash, and in FiltersByHeight past the first
// chunk of a bulk download, as a bug in a store read would.
type panicView struct{ *fakeView }

func (p panicView) FilterByHash(chainhash.Hash) (BlockRecord, bool, error) {
	panic("injected store panic")
}

func (p panicView) FiltersByHeight(start, end uint32) ([]BlockRecord, error) {
	if start > 0 {
		panic("injected store panic mid-download")
	}
	return p.fakeView.FiltersByHeight(start, end)
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) lines() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range bytes.Split(s.buf.Bytes(), []byte("\n")) {
		var m map[string]any
		if json.Unmarshal(l, &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// TestHandlerPanicIs500 injects panics into the store reads behind two
// requests: one before anything was sent (answered 500 "internal error")
// and one in the middle of a bulk download (the connection is cut). Each is
// logged at error with its stack and counted, and the server keeps
// serving.
func TestHandlerPanicIs500(t *testing.T) {
	chain := synthChain(t, 300, 22)
	var logs syncBuffer
	ls := serveLive(t, panicView{synthView(t, chain)}, Config{}, zerolog.New(&logs))

	code, b, err := ls.get("127.8.0.1", "/rest/blockfilter/basic/"+chain[5].Hash.String()+".bin")
	if err != nil || code != 500 || string(b) != "internal error\n" {
		t.Fatalf("panicking handler: %d %q %v", code, b, err)
	}
	c, err := dialFrom("127.8.0.2", ls.addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(ioDeadline))
	// The status line may still sit in the server's buffer when the
	// connection is cut: the client then sees no response at all.
	resp, err := roundTrip(c, bufio.NewReader(c), "/bulk/filters/0.bin", true)
	if err == nil {
		if _, err = io.ReadAll(resp.Body); resp.StatusCode != 200 {
			t.Fatalf("download that panicked midway: %d", resp.StatusCode)
		}
	}
	if err == nil {
		t.Fatal("a download that panicked midway completed")
	}
	c.Close()
	ls.alive(t, "127.8.0.3")
	if n := ls.metric(t, "cfindexd_http_handler_panics_total"); n != 2 {
		t.Fatalf("handler_panics_total %v, want 2", n)
	}
	if n := ls.metric(t, "cfindexd_http_requests_total", "route", "rest_blockfilter", "code", "500"); n != 1 {
		t.Fatalf("requests_total{rest_blockfilter,500} %v", n)
	}
	var logged int
	for _, l := range logs.lines() {
		if l["message"] != "http handler panicked" {
			continue
		}
		logged++
		if l["level"] != "error" || !strings.Contains(fmt.Sprint(l["stack"]), "panicView") || !strings.Contains(fmt.Sprint(l["panic"]), "injected store panic") {
			t.Fatalf("panic log line: %v", l)
		}
	}
	if logged != 2 {
		t.Fatalf("%d panic log lines, want 2", logged)
	}
}

func TestClientKey(t *testing.T) {
	for _, tc := range []struct{ remote, want string }{
		{"192.0.2.7:8384", "192.0.2.7"},
		{"127.3.4.5:1", "127.3.4.5"},
		{"[::ffff:192.0.2.7]:1", "192.0.2.7"},
		{"[2001:db8:1:2:3:4:5:6]:7", "2001:db8:1:2::"},
		{"[2001:db8:1:2:ffff::1]:7", "2001:db8:1:2::"},
		{"[fe80::1%eth0]:7", "fe80::"},
		{"not an address", "invalid IP"},
	} {
		if got := clientKeyOf(tc.remote).String(); got != tc.want {
			t.Errorf("%s: key %s, want %s", tc.remote, got, tc.want)
		}
	}
}

// TestLimitDefaults: keep-alive idle connections are closed within a
// minute whatever the configuration, and the per-address caps never exceed
// the totals.
func TestLimitDefaults(t *testing.T) {
	if _, err := New(Config{IdleTimeout: MaxIdleTimeout + time.Second}, newFakeView(), newTestMetrics(), zerolog.Nop()); !errors.Is(err, ErrBadConfig) {
		t.Errorf("idle timeout above %v: %v", MaxIdleTimeout, err)
	}
	s := newTestServer(t, newFakeView(), Config{MaxConns: 10, MaxConnsPerAddr: 50, MaxBulkInFlight: 3, MaxBulkPerAddr: 5})
	if s.cfg.MaxConnsPerAddr != 10 || s.cfg.MaxBulkPerAddr != 3 {
		t.Errorf("per-address caps %d, %d above the totals", s.cfg.MaxConnsPerAddr, s.cfg.MaxBulkPerAddr)
	}
	d := newTestServer(t, newFakeView(), Config{}).cfg
	if d.IdleTimeout > MaxIdleTimeout || d.ReadHeaderTimeout > 10*time.Second || d.MaxConns != DefaultMaxConns || d.BulkMinRate != DefaultBulkMinRate {
		t.Errorf("defaults %+v", d)
	}
}
