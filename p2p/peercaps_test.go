package p2p

// Admission under crowding: no newcomer refused while slots are free, an
// attacker's /16 or address cannot lock out its neighbours, and a
// discouraged NAT address still gets in where peers sit idle. Loopback,
// source addresses from 127.0.0.0/8 standing in for many hosts.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
)

// askHeaders sends getcfheaders for heights 1..100 and reads until the
// answer, within timeout.
func askHeaders(p *rawPeer, view *fakeView, timeout time.Duration) error {
	stop := view.at(100)
	if err := p.send(wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 1, &stop.hash)); err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		m, err := p.read(time.Until(deadline))
		if err != nil {
			return fmt.Errorf("waiting for cfheaders: %w", err)
		}
		if h, ok := m.(*wire.MsgCFHeaders); ok {
			if len(h.FilterHashes) != 100 {
				return fmt.Errorf("%d filter hashes", len(h.FilterHashes))
			}
			return nil
		}
	}
}

// connectRaw dials from ip and completes the handshake; the connection is
// closed when the test ends.
func connectRaw(t *testing.T, addr, ip string) (*rawPeer, error) {
	p, err := dialRaw(addr, ip)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = p.conn.Close() })
	if err := p.handshake(true); err != nil {
		return nil, fmt.Errorf("handshake: %w", err)
	}
	return p, nil
}

// 200 honest clients of one /16 (a campus, a carrier-grade NAT), some ten
// to an address, with maxpeers 400 and the default levels: all connected
// at once, and all served.
func TestOneSubnetAllAdmitted(t *testing.T) {
	needLoopbackRange(t)
	view := newFakeView(200, 120)
	cfg := attackConfig(view, 400)
	cfg.MaxPeersPerIP, cfg.MaxPeersPerSubnet = DefaultMaxPeersPerIP, DefaultMaxPeersPerSubnet
	m := newCountingMetrics()
	cfg.Metrics = m
	srv := startServer(t, cfg)

	const clients = 200
	ip := func(i int) string {
		if i < 120 { // 120 addresses of their own
			return fmt.Sprintf("127.90.0.%d", 1+i)
		}
		return fmt.Sprintf("127.90.1.%d", 1+(i-120)/10) // 8 addresses of 10
	}
	peers := make([]*rawPeer, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() { peers[i], errs[i] = connectRaw(t, srv.addr, ip(i)) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("refused: %v", err)
	}
	waitFor(t, "every client past its handshake", ioTimeout, func() bool { return srv.PeerCount() == clients })
	for i := range clients {
		wg.Go(func() { errs[i] = askHeaders(peers[i], view, testtime.Scale(ioTimeout)) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("not served: %v", err)
	}
	if n := srv.ConnCount(); n != clients || m.count("evicted") != 0 || m.refusals("full")+m.refusals("discouraged") != 0 {
		t.Fatalf("%d connected, %d evicted, %d refused: want all %d connected", n, m.count("evicted"),
			m.refusals("full")+m.refusals("discouraged"), clients)
	}
}

// An attacker holds every slot, from six addresses of one /16,
// reconnecting as soon as it is evicted: idle (it answers pings and asks
// nothing), or pipelining getcfilters and never reading. A good client in the attacker's /16, and one behind the
// attacker's own address, connect and are served, every attempt.
func TestAttackerSubnetNeighboursServed(t *testing.T) {
	needLoopbackRange(t)
	for _, mode := range []string{"idle", "pipelining"} {
		t.Run(mode, func(t *testing.T) {
			view := newFakeViewFilters(1100, 121, 25_000)
			cfg := attackConfig(view, 40)
			cfg.MaxPeersPerIP, cfg.MaxPeersPerSubnet = DefaultMaxPeersPerIP, DefaultMaxPeersPerSubnet
			cfg.SendStallTimeout = time.Minute // pipeliners keep their slots
			m := newCountingMetrics()
			cfg.Metrics = m
			srv := startServer(t, cfg)
			stop := view.at(999)
			req := wire.NewMsgGetCFilters(wire.GCSFilterRegular, 0, &stop.hash)

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			wg := runAttackers(ctx, cfg.MaxPeers, func(ctx context.Context, i, _ int) {
				p, err := dialRaw(srv.addr, fmt.Sprintf("127.80.0.%d", 1+i%6))
				if err != nil {
					time.Sleep(20 * time.Millisecond)
					return
				}
				defer p.conn.Close()
				if p.handshake(true) != nil {
					time.Sleep(20 * time.Millisecond)
					return
				}
				if mode == "pipelining" {
					// Never reads an answer; a write fails once evicted.
					for range 20 {
						if p.send(req) != nil {
							return
						}
					}
					for ctx.Err() == nil && p.send(wire.NewMsgPing(1)) == nil {
						time.Sleep(20 * time.Millisecond)
					}
					time.Sleep(20 * time.Millisecond)
					return
				}
				stop := context.AfterFunc(ctx, func() { _ = p.conn.Close() })
				defer stop()
				for { // until evicted
					if _, err := p.readRaw(time.Minute); err != nil {
						break
					}
				}
				time.Sleep(20 * time.Millisecond)
			})
			defer wg.Wait()
			defer cancel()
			waitFor(t, "the attacker holding every slot", ioTimeout, func() bool { return srv.ConnCount() == cfg.MaxPeers })

			const attempts = 19
			var served [2]int
			for k := range attempts {
				for j, ip := range []string{fmt.Sprintf("127.80.200.%d", 1+k), "127.80.0.1"} {
					if err := wellBehaved(srv.addr, ip, view, testtime.Scale(ioTimeout)); err != nil {
						t.Errorf("attempt %d from %s: %v", k, ip, err)
						continue
					}
					served[j]++
				}
			}
			t.Logf("served %d/%d in the attacker's /16, %d/%d behind its address; %d evictions, %d refusals",
				served[0], attempts, served[1], attempts, m.count("evicted"), m.refusals("full"))
		})
	}
}

// One malformed message from a NAT address discourages it. With the slots
// kept full by idle peers of 124 /16s, the good clients behind that address
// are refused while nobody has been idle for long; once peers have been
// idle for minutes, each good client takes the place of one and is served.
func TestDiscouragedAddressDisplacesIdlePeers(t *testing.T) {
	needLoopbackRange(t)
	view := newFakeView(200, 122)
	cfg := attackConfig(view, 125)
	m := newCountingMetrics()
	cfg.Metrics = m
	var offset atomic.Int64
	cfg.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	srv := startServer(t, cfg)

	const nat = "127.240.0.1"
	bad, err := connectRaw(t, srv.addr, nat)
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.write(rawFrame(wire.CmdPing, make([]byte, 9))); err != nil { // a ping of 9 bytes
		t.Fatal(err)
	}
	waitFor(t, "the NAT address discouraged", ioTimeout, func() bool { return m.count("discouraged") == 1 })

	const idle = 124
	for i := range idle {
		if _, err := connectRaw(t, srv.addr, fmt.Sprintf("127.%d.0.1", 100+i)); err != nil {
			t.Fatalf("idle peer %d: %v", i, err)
		}
	}
	waitFor(t, "the idle peers holding all slots but one", ioTimeout, func() bool { return srv.ConnCount() == idle })
	if _, err := connectRaw(t, srv.addr, nat); err == nil {
		t.Fatal("discouraged address admitted into the last slot")
	}
	waitFor(t, "the refusal counted", ioTimeout, func() bool { return m.refusals("discouraged") == 1 })

	offset.Store(int64(peerpolicy.DiscouragedMinIdle + time.Minute))
	const good = 8
	for k := range good {
		p, err := connectRaw(t, srv.addr, nat)
		if err != nil {
			t.Fatalf("good client %d behind the discouraged address: %v", k, err)
		}
		if err := askHeaders(p, view, testtime.Scale(ioTimeout)); err != nil {
			t.Fatalf("good client %d behind the discouraged address: %v", k, err)
		}
	}
	if m.count("evicted") != good || srv.ConnCount() != idle {
		t.Fatalf("%d evictions, %d connections: want %d and %d", m.count("evicted"), srv.ConnCount(), good, idle)
	}
}
