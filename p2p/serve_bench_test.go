package p2p

import (
	"context"
	"net"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/store"
)

// discardConn is a net.Conn whose writes succeed at once and whose reads
// block until Close: the server side of a peer that reads instantly.
type discardConn struct {
	written atomic.Int64
	closed  chan struct{}
}

func newDiscardConn() *discardConn { return &discardConn{closed: make(chan struct{})} }

func (c *discardConn) Write(b []byte) (int, error) {
	c.written.Add(int64(len(b)))
	return len(b), nil
}
func (c *discardConn) Read([]byte) (int, error)         { <-c.closed; return 0, net.ErrClosed }
func (c *discardConn) Close() error                     { close(c.closed); return nil }
func (c *discardConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *discardConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *discardConn) SetDeadline(time.Time) error      { return nil }
func (c *discardConn) SetReadDeadline(time.Time) error  { return nil }
func (c *discardConn) SetWriteDeadline(time.Time) error { return nil }

// benchServer serves a real store of n blocks with small filters (1 to
// 200 bytes, as on cfbench's chain) to one peer whose connection discards
// what it is sent.
func benchServer(b *testing.B, n int) (*Server, *peer, []*fakeBlock, context.Context) {
	b.Helper()
	model := newFakeView(n, 77)
	blocks := make([]*fakeBlock, n)
	for h := range blocks {
		blocks[h] = model.at(uint32(h))
	}
	st, err := store.Open(filepath.Join(b.TempDir(), "filters.db"), blocks[0].hash, store.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	if err := st.CommitBatch(records(blocks)); err != nil {
		b.Fatal(err)
	}
	cfg := testConfig(nil)
	cfg.View = newStoreView(st)
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	p := pipePeer(b, s, newDiscardConn())
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	go func() { _ = p.writeLoop(ctx) }()
	return s, p, blocks, ctx
}

// processCPU is this process's user plus system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkServeGetCFilters is the server's whole work for a 1,000-block
// getcfilters answer of small filters, from the store to the socket: read,
// frame, queue, write. It reports the wall time and the CPU time (of the
// whole process: the writer goroutine and the collector count) per filter;
// the CPU time is the figure to compare on a shared machine.
func BenchmarkServeGetCFilters(b *testing.B) {
	s, p, blocks, ctx := benchServer(b, 2300)
	emit := p.emit(ctx)
	var filters int
	cpu0 := processCPU()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := uint32(i*131) % uint32(len(blocks)-1000)
		msg := wire.NewMsgGetCFilters(wire.GCSFilterRegular, start, &blocks[start+999].hash)
		if err := dispatch(ctx, s.env, p.st, msg, emit); err != nil {
			b.Fatal(err)
		}
		filters += 1000
	}
	for p.budget.Queued() > 0 {
		time.Sleep(time.Millisecond)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(filters), "ns/filter")
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(filters), "cpu-ns/filter")
}

// BenchmarkServeGetCFHeaders is the same for a 2,000-block getcfheaders.
func BenchmarkServeGetCFHeaders(b *testing.B) {
	benchServeAnswers(b, func(blocks []*fakeBlock, i int) wire.Message {
		start := uint32(i*131) % uint32(len(blocks)-2000)
		return wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, start, &blocks[start+1999].hash)
	})
}

// BenchmarkServeGetHeaders is the same for a getheaders answer of 2,000
// headers (a locator of one active block's hash, as a peer starting from
// genesis sends).
func BenchmarkServeGetHeaders(b *testing.B) {
	benchServeAnswers(b, func(blocks []*fakeBlock, i int) wire.Message {
		start := uint32(i*131) % uint32(len(blocks)-2001)
		msg := wire.NewMsgGetHeaders()
		if err := msg.AddBlockLocatorHash(&blocks[start].hash); err != nil {
			b.Fatal(err)
		}
		return msg
	})
}

// benchServeAnswers measures the server's whole work for the requests
// request makes (the i-th of a 2,300-block chain), reporting the CPU time
// of the process per answer.
func benchServeAnswers(b *testing.B, request func(blocks []*fakeBlock, i int) wire.Message) {
	s, p, blocks, ctx := benchServer(b, 2300)
	emit := p.emit(ctx)
	cpu0 := processCPU()
	var answers int
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		answers++
		if err := dispatch(ctx, s.env, p.st, request(blocks, i), emit); err != nil {
			b.Fatal(err)
		}
	}
	for p.budget.Queued() > 0 {
		time.Sleep(time.Millisecond)
	}
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(answers), "cpu-ns/answer")
}
