package p2p

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/wireframe"
)

const (
	// loadClients is the number of concurrent raw clients.
	loadClients = 100
	// loadDuration is the figure for the load test.
	loadDuration = 30 * time.Second
	// loadDurationShort is used under -short.
	loadDurationShort = 5 * time.Second
	// loadChainLength is the fake chain served.
	loadChainLength = 20_000
	// loadReadTimeout bounds one read of a load client. It is generous:
	// the suite shares 2 cores with other packages' tests (a load average
	// of 12 was seen), and a stall here is reported as an error.
	loadReadTimeout = 30 * time.Second
)

func loadTestDuration() time.Duration {
	if testing.Short() {
		return loadDurationShort
	}
	return loadDuration
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func TestManyClientsRandomFilterRanges(t *testing.T) {
	duration := loadTestDuration()
	view := newFakeView(loadChainLength, 23)
	srv := startServer(t, testConfig(view))

	baseGoroutines := runtime.NumGoroutine()
	baseHeap := heapAlloc()

	var filters, bytesServed, requests atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, loadClients)
	start := time.Now()
	deadline := start.Add(duration)
	for i := 0; i < loadClients; i++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			if err := loadClient(srv.addr, view, seed, deadline, &filters, &bytesServed, &requests); err != nil {
				errs <- err
			}
		}(uint64(i))
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	waitFor(t, "peers gone", 10*time.Second, func() bool { return srv.PeerCount() == 0 })
	var gAfter int
	waitFor(t, "goroutines back to baseline", 10*time.Second, func() bool {
		gAfter = runtime.NumGoroutine()
		return gAfter <= baseGoroutines
	})
	heapAfter := heapAlloc()
	t.Logf("%d clients for %v: %d requests, %d filters (%.0f filters/s), %.1f MiB served (%.1f MiB/s)",
		loadClients, elapsed.Round(time.Millisecond), requests.Load(), filters.Load(),
		float64(filters.Load())/elapsed.Seconds(), float64(bytesServed.Load())/(1<<20),
		float64(bytesServed.Load())/(1<<20)/elapsed.Seconds())
	t.Logf("goroutines %d before, %d after; heap %.1f MiB before, %.1f MiB after",
		baseGoroutines, gAfter, float64(baseHeap)/(1<<20), float64(heapAfter)/(1<<20))
	if slack := max(baseHeap/4, 4<<20); heapAfter > baseHeap+slack {
		t.Errorf("heap %d after the clients left, baseline %d", heapAfter, baseHeap)
	}
	if requests.Load() < loadClients {
		t.Errorf("only %d requests served", requests.Load())
	}
}

// loadClient asks for random 1,000-filter ranges until deadline and checks
// each answer is complete and in order.
func loadClient(addr string, view *fakeView, seed uint64, deadline time.Time, filters, served, requests *atomic.Int64) error {
	tb := &errTB{}
	c, _ := connectErr(tb, addr)
	if tb.err != nil {
		return tb.err
	}
	defer c.conn.Close()
	rng := rand.New(rand.NewPCG(seed, 99))
	for time.Now().Before(deadline) {
		first := uint32(rng.IntN(loadChainLength - MaxGetCFilters + 1))
		last := first + MaxGetCFilters - 1
		stop := view.at(last)
		if err := c.trySend(wire.NewMsgGetCFilters(wire.GCSFilterRegular, first, &stop.hash)); err != nil {
			return fmt.Errorf("client %d: send: %w", seed, err)
		}
		for h := first; h <= last; h++ {
			m, err := c.tryRead(loadReadTimeout)
			if err != nil {
				return fmt.Errorf("client %d: read filter %d: %w", seed, h, err)
			}
			cf, ok := m.(*wire.MsgCFilter)
			if !ok || cf.BlockHash != view.at(h).hash {
				return fmt.Errorf("client %d: want cfilter for %d, got %s", seed, h, m.Command())
			}
			served.Add(int64(wireframe.HeaderSize + 1 + 32 + wire.VarIntSerializeSize(uint64(len(cf.Data))) + len(cf.Data)))
		}
		filters.Add(MaxGetCFilters)
		requests.Add(1)
	}
	return nil
}

// errTB lets the rawClient helpers run outside the test goroutine: the
// first failure is recorded and the helper's goroutine exits.
type errTB struct {
	testing.TB
	err error
}

func (e *errTB) Helper()                           {}
func (e *errTB) Cleanup(func())                    {}
func (e *errTB) Fatal(args ...any)                 { e.fail(fmt.Sprint(args...)) }
func (e *errTB) Fatalf(format string, args ...any) { e.fail(fmt.Sprintf(format, args...)) }
func (e *errTB) Errorf(format string, args ...any) { e.fail(fmt.Sprintf(format, args...)) }
func (e *errTB) fail(msg string)                   { e.err = fmt.Errorf("%s", msg); runtime.Goexit() }
func (e *errTB) Logf(format string, args ...any)   {}
func (e *errTB) Name() string                      { return "loadClient" }

// connectErr is connect for an errTB, run in its own goroutine so a
// failure's Goexit ends only that goroutine.
func connectErr(tb *errTB, addr string) (c *rawClient, v *wire.MsgVersion) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, v = connect(tb, addr)
	}()
	<-done
	return c, v
}
