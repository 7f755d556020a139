package p2p

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"
)

// readCFilters sends getcfilters first..first+n-1 and reads the n cfilter
// frames without decoding them.
func readCFilters(c *rawClient, view *fakeView, first, n uint32) error {
	stop := view.at(first + n - 1).hash
	if err := c.trySend(wire.NewMsgGetCFilters(wire.GCSFilterRegular, first, &stop)); err != nil {
		return err
	}
	_ = c.SetReadDeadline(time.Now().Add(4 * ioTimeout))
	for got := uint32(0); got < n; {
		cmd, _, err := c.Skip()
		if err != nil {
			return err
		}
		if cmd == wire.CmdCFilter {
			got++
		}
	}
	return nil
}

// BenchmarkGoodClientAmongGreedyReaders is the attack class "many peers
// read getcfilters of 1,000 blocks of 23 KB filters as fast as they can"
// at the P2P level: each iteration is one getcfilters of 100 blocks by a
// light client from its own address, timed, while greedy peers (each from
// its own /16) pull continuously. It reports the light client's p50 and
// p99 latency beside the same client's latency alone in the same run, and
// its rate of filters over a greedy peer's: a client asking back to back
// gets an equal share (1), one that pauses between requests (it asks for
// less than a greedy peer gets) is served ahead of the greedy peers.
func BenchmarkGoodClientAmongGreedyReaders(b *testing.B) {
	for _, tc := range []struct {
		greedy int
		pause  time.Duration
	}{{0, 0}, {120, 0}, {120, 500 * time.Millisecond}} {
		greedy := tc.greedy
		b.Run(fmt.Sprintf("greedy=%d/pause=%v", greedy, tc.pause), func(b *testing.B) {
			const chain = 3000
			view := newFakeViewFilters(chain, 5, 23_000)
			cfg := testConfig(view)
			cfg.MaxPeers = DefaultMaxPeers // the daemon's: per-peer reserves depend on it
			srv := startServer(b, cfg)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			var greedyFilters atomic.Int64
			defer func() { cancel(); wg.Wait() }()
			for i := range greedy {
				c := connectFrom(b, srv.addr, fmt.Sprintf("127.%d.0.1", 10+i), nil...)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := uint32(i); ctx.Err() == nil; j++ {
						if err := readCFilters(c, view, (j*331)%(chain-1000), 1000); err != nil {
							if ctx.Err() == nil {
								b.Error(err)
							}
							return
						}
						greedyFilters.Add(1000)
					}
				}()
			}
			good := connectFrom(b, srv.addr, "127.250.0.1")
			rng := rand.New(rand.NewPCG(1, 2))
			time.Sleep(time.Second) // the greedy peers at full speed
			var lat []time.Duration
			began, filters0 := time.Now(), greedyFilters.Load()
			for b.Loop() {
				start := time.Now()
				if err := readCFilters(good, view, rng.Uint32N(chain-100), 100); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
				time.Sleep(tc.pause)
			}
			elapsed := time.Since(began).Seconds()
			greedyRate := float64(greedyFilters.Load()-filters0) / elapsed
			b.ReportMetric(greedyRate, "greedy-filters/s")
			b.ReportMetric(greedyRate+float64(100*len(lat))/elapsed, "filters/s")
			if greedy > 0 {
				// The light client's rate over a greedy peer's: 1 is an
				// equal share.
				b.ReportMetric(float64(100*len(lat))/elapsed/(greedyRate/float64(greedy)), "light/greedy-rate")
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1e3, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1e3, "p99-ms")
		})
	}
}
