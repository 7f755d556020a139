package httpapi

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// readCountingView counts the reads of one state: one per REST answer
// built from the chain.
type readCountingView struct {
	*fakeView
	reads atomic.Int64
}

func (v *readCountingView) Read(fn func(ChainReader) error) error {
	v.reads.Add(1)
	return v.fakeView.Read(fn)
}

// TestPipelinedNonReaderGetsOneAnswer pipelines requests for 2,000 filter
// headers (64 KiB each) on one connection with a small receive buffer:
// a client that reads none of the answers makes the server build one,
// however large the server's socket send buffer (the kernel's default
// here, unlike TestPipelinedNonReaderHoldsOneResponse), and its connection
// is closed at the end of the minimum rate's window; a client that reads
// every answer gets them all.
func TestPipelinedNonReaderGetsOneAnswer(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the unsent bytes of a socket are read on Linux only")
	}
	const blocks = 2000
	recs := synthChain(t, blocks-1, 33)
	for _, tc := range []struct {
		name      string
		pipelined int
		reads     bool
		window    time.Duration
		wantBuilt int64 // answers built, at most
	}{
		{"non-reader, 100 pipelined", 100, false, 300 * time.Millisecond, 1},
		{"non-reader, 2 pipelined", 2, false, 300 * time.Millisecond, 1},
		{"reader, 20 pipelined", 20, true, 5 * time.Second, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &readCountingView{fakeView: synthView(t, recs)}
			ls := serveLive(t, v, Config{BulkMinRate: 64 << 10, BulkMinRateWindow: tc.window}, zerolog.Nop())
			// The receive buffer is set before the connection is, so the
			// window it offers is small from the first byte.
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.61.0.1")}, Timeout: ioDeadline,
				Control: func(_, _ string, rc syscall.RawConn) error {
					return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10) })
				}}
			c, err := d.Dial("tcp", ls.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			request := "GET /rest/blockfilterheaders/basic/" + recs[0].Hash.String() + ".bin?count=2000 HTTP/1.1\r\nHost: cfindexd\r\n\r\n"
			_ = c.SetDeadline(time.Now().Add(ioDeadline))
			if _, err := c.Write(bytes.Repeat([]byte(request), tc.pipelined)); err != nil {
				t.Fatal(err)
			}
			if tc.reads {
				br := bufio.NewReader(c)
				for i := range tc.pipelined {
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						t.Fatalf("answer %d: %v", i, err)
					}
					n, err := io.Copy(io.Discard, resp.Body)
					if err != nil || resp.StatusCode != 200 || n != blocks*32 {
						t.Fatalf("answer %d: %d, %d bytes, %v", i, resp.StatusCode, n, err)
					}
				}
			} else {
				// Wait until the server has given up on the connection.
				deadline := time.Now().Add(ioDeadline)
				for ls.metric(t, "cfindexd_http_slow_cut_total", "kind", "answer") < 1 {
					if time.Now().After(deadline) {
						t.Fatal("the non-reader's connection was never cut")
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			if got := v.reads.Load(); got > tc.wantBuilt {
				t.Errorf("%d answers built, want at most %d", got, tc.wantBuilt)
			}
		})
	}
}
