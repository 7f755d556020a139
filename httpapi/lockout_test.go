package httpapi

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/testtime"
)

// headersTarget returns a view of a synthetic chain of MaxRange+1 blocks
// and the path of its largest headers answer: MaxRange headers in hex.
func headersTarget(t *testing.T) (*fakeView, string, int) {
	t.Helper()
	recs := synthChain(t, MaxRange, 17)
	path := fmt.Sprintf("/rest/headers/%s.hex?count=%d", recs[0].Hash, MaxRange)
	return synthView(t, recs), path, MaxRange*2*blockHeaderSize + 1
}

// pipeline connects from ip and sends n requests for path at once,
// without reading any answer.
func pipeline(ip, addr, path string, n int) (net.Conn, error) {
	c, err := dialFrom(ip, addr)
	if err != nil {
		return nil, err
	}
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: cfindexd\r\n\r\n", path)
	_ = c.SetWriteDeadline(time.Now().Add(ioDeadline))
	if _, err := c.Write(bytes.Repeat([]byte(req), n)); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// heapPeak samples the heap in use until stop is called, which returns
// the heap at the start and the peak.
func heapPeak() (stop func() (base, peak uint64)) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var top atomic.Uint64
	done, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > top.Load() {
				top.Store(m.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() (uint64, uint64) {
		close(done)
		<-sampled
		return base, top.Load()
	}
}

// connClosed waits until the server has admitted a connection, then until
// it has none open.
func connClosed(t *testing.T, ls *liveServer, whose string) {
	t.Helper()
	testtime.WaitFor(t, whose+" connection admitted", 5*time.Second, func() bool {
		return ls.metric(t, "cfindexd_http_connections_open") > 0
	})
	testtime.WaitFor(t, whose+" connection closed", 10*time.Second, func() bool {
		return ls.metric(t, "cfindexd_http_connections_open") == 0
	})
}

// smallBuffers wraps a listener so that every accepted connection has a
// small socket send buffer: an answer larger than it must be read by the
// client to be written, as a large answer must on any real network.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(16 << 10)
	}
	return c, err
}

func serveSmallBuffers(t *testing.T, v ChainView, cfg Config) *liveServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveLiveOn(t, v, cfg, zerolog.Nop(), smallBuffers{ln})
}

// TestPipelinedNonReaderHoldsOneResponse sends a hundred pipelined
// requests for the largest headers answer on one connection and reads
// nothing: the server answers them one at a time, so it serves only what
// the socket buffers take plus the one answer in progress, holds no more
// than that answer in memory, and cuts the connection about one window of
// the minimum rate after the answer stalls, long before WriteTimeout.
func TestPipelinedNonReaderHoldsOneResponse(t *testing.T) {
	const window = 300 * time.Millisecond
	v, path, size := headersTarget(t)
	ls := serveSmallBuffers(t, v, Config{BulkMinRate: 256 << 10, BulkMinRateWindow: window})
	stop := heapPeak()
	began := time.Now()
	c, err := pipeline("127.8.0.1", ls.addr, path, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(16 << 10)
	}
	connClosed(t, ls, "the non-reader's")
	held := time.Since(began)
	base, peak := stop()
	served := ls.metric(t, "cfindexd_http_requests_total", "route", "rest_headers", "code", "200")
	_ = c.SetReadDeadline(time.Now().Add(ioDeadline))
	got, _ := io.Copy(io.Discard, c)
	// Socket buffers of some 100 KB take less than one answer; the answer
	// being written when the window ran out is the last.
	if served > 3 || got >= 3*int64(size) {
		t.Fatalf("served %v of 100 pipelined answers (%d bytes reached the client) to a client that reads nothing", served, got)
	}
	// The cut is counted when the handler returns, which may be just after
	// the connection is closed.
	testtime.WaitFor(t, "the slow reader's answer counted as cut", 5*time.Second, func() bool {
		return ls.metric(t, "cfindexd_http_slow_cut_total", "kind", "answer") >= 1
	})
	if cut := ls.metric(t, "cfindexd_http_slow_cut_total", "kind", "answer"); cut != 1 {
		t.Fatalf("%v answers counted as cut for reading too slowly, want 1", cut)
	}
	if limit := testtime.Scale(10 * window); held > limit {
		t.Fatalf("non-reader held its connection %v, want about one window (%v)", held, window)
	}
	grew := peak - min(peak, base)
	if budget := uint64(2*headerAnswer + 8<<20); grew > budget {
		t.Fatalf("heap grew by %d KB, budget %d KB", grew>>10, budget>>10)
	}
	t.Logf("100 pipelined requests, none read: %v answered, %d bytes sent, cut after %v; heap %d KB -> peak %d KB",
		served, got, held.Round(time.Millisecond), base>>10, peak>>10)
	ls.alive(t, "127.8.0.2")
}

// TestSlowSteadyReaderIsNotCut reads the largest headers answer through
// small socket buffers at a steady pace above the minimum rate, and the
// same answer far below it: the first gets every byte, the second is cut.
func TestSlowSteadyReaderIsNotCut(t *testing.T) {
	const (
		rate   = 64 << 10 // bytes per second
		window = 250 * time.Millisecond
	)
	v, path, size := headersTarget(t)
	ls := serveSmallBuffers(t, v, Config{BulkMinRate: rate, BulkMinRateWindow: window})
	read := func(ip string, every time.Duration) (int64, time.Duration, error) {
		c, err := dialFrom(ip, ls.addr)
		if err != nil {
			return 0, 0, err
		}
		defer c.Close()
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(64 << 10)
		}
		began := time.Now()
		_ = c.SetDeadline(began.Add(ioDeadline))
		resp, err := roundTrip(c, bufio.NewReaderSize(c, 4<<10), path, true)
		if err != nil {
			return 0, 0, err
		}
		defer resp.Body.Close()
		var n int64
		buf := make([]byte, 4<<10)
		for {
			k, err := resp.Body.Read(buf)
			n += int64(k)

			if err == io.EOF {
				return n, time.Since(began), nil
			}
			if err != nil {
				return n, time.Since(began), err
			}
			time.Sleep(every)
		}
	}
	// 4 KiB every 5 ms is some 800 KB/s, twelve times the rate.
	n, took, err := read("127.9.0.1", 5*time.Millisecond)
	if err != nil || n != int64(size) {
		t.Fatalf("steady reader: %d of %d bytes in %v: %v", n, size, took, err)
	}
	testtime.WaitFor(t, "the steady reader's connection closed", 5*time.Second, func() bool {
		return ls.metric(t, "cfindexd_http_connections_open") == 0
	})
	// 1 KiB every 100 ms is a sixth of the rate: the server closes the
	// connection while the client still reads what the buffers hold.
	c, err := dialFrom("127.9.0.2", ls.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	began := time.Now()
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: cfindexd\r\nConnection: close\r\n\r\n", path); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	slowRead := make(chan int64, 1)
	go func() {
		var n int64
		buf := make([]byte, 1<<10)
		defer func() { slowRead <- n }()
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			_ = c.SetReadDeadline(time.Now().Add(ioDeadline))
			k, err := c.Read(buf)
			n += int64(k)
			if err != nil {
				return
			}
		}
	}()
	connClosed(t, ls, "the slow reader's")
	cutAfter := time.Since(began)
	close(stop)
	// The cut is counted when the handler returns, which may be just after
	// the connection is closed.
	testtime.WaitFor(t, "the slow reader's answer counted as cut", 5*time.Second, func() bool {
		return ls.metric(t, "cfindexd_http_slow_cut_total", "kind", "answer") >= 1
	})
	if cut := ls.metric(t, "cfindexd_http_slow_cut_total", "kind", "answer"); cut != 1 {
		t.Fatalf("%v answers counted as cut for reading too slowly, want 1", cut)
	}
	t.Logf("steady reader: %d bytes in %v; reader at a sixth of the rate cut after %v, having read %d bytes",
		n, took.Round(time.Millisecond), cutAfter.Round(time.Millisecond), <-slowRead)
}

// attack keeps conns connections from ip that each pipeline requests for
// path and never read, reconnecting whenever the server closes one, until
// stop is closed.
func attack(ls *liveServer, ip, path string, conns int, stop <-chan struct{}, wg *sync.WaitGroup) {
	for range conns {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := pipeline(ip, ls.addr, path, 100)
				if err != nil {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				// One more request now and then shows when the server has
				// closed the connection: the write fails.
				req := []byte("GET /healthz HTTP/1.1\r\nHost: cfindexd\r\n\r\n")
				for err == nil {
					select {
					case <-stop:
						err = net.ErrClosed
					case <-time.After(50 * time.Millisecond):
						_ = c.SetWriteDeadline(time.Now().Add(ioDeadline))
						_, err = c.Write(req)
					}
				}
				c.Close()
			}
		})
	}
}

// TestPipeliningNonReadersDoNotLockOut is the lockout attack scaled down:
// four addresses of one /16 each keep sixteen connections, the whole
// MaxConns, pipelining requests for the largest headers answer and never
// reading, reconnecting when closed. Fresh REST clients from another
// network, and from the attackers' own network, are each answered within
// two seconds, never 503, and the heap stays within the connections'
// bound.
func TestPipeliningNonReadersDoNotLockOut(t *testing.T) {
	const maxConns, perAddr, attackers = 64, 16, 4
	v, path, _ := headersTarget(t)
	cfg := Config{MaxConns: maxConns, MaxConnsPerAddr: perAddr}
	ls := serveLive(t, v, cfg, zerolog.Nop())
	stopHeap := heapPeak()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	var once sync.Once
	halt := func() { once.Do(func() { close(stop) }) }
	defer halt()
	for a := range attackers {
		attack(ls, fmt.Sprintf("127.20.0.%d", a+1), path, perAddr, stop, &wg)
	}
	testtime.WaitFor(t, "the attackers hold every connection", 10*time.Second, func() bool {
		return ls.metric(t, "cfindexd_http_connections_open") >= maxConns
	})
	probe := func(ip string) (int, time.Duration, error) {
		began := time.Now()
		code, _, err := ls.get(ip, "/rest/blockhashbyheight/1.hex")
		return code, time.Since(began), err
	}
	limit := testtime.Scale(2 * time.Second)
	var failed []string
	for _, group := range []struct {
		name string
		ip   func(i int) string
	}{
		{"another network", func(i int) string { return hostAddr(21, i) }},
		{"the attackers' network", func(i int) string { return fmt.Sprintf("127.20.9.%d", i+1) }},
	} {
		var took []time.Duration
		refused := 0
		for i := range 20 {
			code, d, err := probe(group.ip(i))
			took = append(took, d)
			switch {
			case code == http.StatusServiceUnavailable:
				refused++
				failed = append(failed, fmt.Sprintf("%s: 503", group.name))
			case err != nil || code != http.StatusOK:
				failed = append(failed, fmt.Sprintf("%s: %d %v", group.name, code, err))
			case d > limit:
				failed = append(failed, fmt.Sprintf("%s: answered after %v", group.name, d))
			}
		}
		slices.Sort(took)
		t.Logf("fresh clients from %s: %d of %d refused 503; latency p50 %v, max %v",
			group.name, refused, len(took), took[len(took)/2].Round(100*time.Microsecond), took[len(took)-1].Round(time.Millisecond))
	}
	halt()
	wg.Wait()
	base, peak := stopHeap()
	evicted := ls.metric(t, "cfindexd_http_connections_evicted_total", "cap", "total") +
		ls.metric(t, "cfindexd_http_connections_evicted_total", "cap", "per_address")
	t.Logf("%v connections evicted; heap %d MB -> peak %d MB", evicted, base>>20, peak>>20)
	if len(failed) > 0 {
		t.Fatalf("%d fresh requests failed, first: %v", len(failed), failed[0])
	}
	// Each connection holds at most one answer in progress; evicted ones
	// let theirs go as their write fails.
	perConn := uint64(connFixed + DefaultMaxHeaderBytes + headerAnswer)
	if grew, budget := peak-min(peak, base), 2*maxConns*perConn+16<<20; grew > budget {
		t.Fatalf("heap grew by %d MB, budget %d MB", grew>>20, budget>>20)
	}
}
