package httpapi

import (
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"
)

// gateConn is a connection from addr that only records being closed.
type gateConn struct {
	net.Conn
	addr   string
	closed bool
}

func (c *gateConn) RemoteAddr() net.Addr {
	return net.TCPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(c.addr), 1))
}
func (c *gateConn) Close() error                     { c.closed = true; return nil }
func (c *gateConn) SetWriteDeadline(time.Time) error { return nil }
func (c *gateConn) Write(p []byte) (int, error)      { return len(p), nil }

// TestGateEvictsBusyFromBiggestNetwork fills a gate with busy connections
// and admits newcomers from several networks: each closes a busy
// connection of the network, then the address, holding the most, the one
// stalled longest, never one alone in its network, nor one of the
// newcomer's network unless that network holds the most; an idle one goes
// before a busy one of its address; with only lone busy connections left
// the newcomer is refused.
func TestGateEvictsBusyFromBiggestNetwork(t *testing.T) {
	clock := time.Unix(1e9, 0)
	g := newConnGate(nil, Config{MaxConns: 6, MaxConnsPerAddr: 6}, newTestMetrics())
	g.now = func() time.Time { clock = clock.Add(time.Second); return clock }
	conns := map[*gatedConn]string{}
	admit := func(addr string, state http.ConnState) *gatedConn {
		t.Helper()
		gc := g.admit(&gateConn{addr: addr})
		if gc == nil {
			return nil
		}
		g.connState(gc, state)
		conns[gc] = addr
		return gc
	}
	evicted := func() []string {
		var out []string
		for gc, a := range conns {
			if gc.Conn.(*gateConn).closed {
				out = append(out, a)
				delete(conns, gc)
			}
		}
		return out
	}
	first := admit("127.30.0.1", http.StateActive)
	for _, a := range []string{"127.30.0.1", "127.30.0.1", "127.30.0.2", "127.31.0.1", "127.32.0.1"} {
		admit(a, http.StateActive)
	}
	if ev := evicted(); len(ev) != 0 {
		t.Fatalf("evicted below the cap: %v", ev)
	}
	steps := []struct{ newcomer, want string }{
		{"127.33.0.1", "127.30.0.1"}, // 127.30 holds 4: its busiest address
		{"127.31.0.2", "127.30.0.1"}, // 127.30 holds 3, the newcomer's 1
		{"127.31.0.3", "127.30.0.1"}, // 2 each: not the newcomer's network
		{"127.31.0.4", "127.31.0.1"}, // 127.31 holds 3: the most, its own
		{"127.40.0.1", "127.31.0.2"}, // 127.31 still holds 3
	}
	for i, s := range steps {
		if admit(s.newcomer, http.StateActive) == nil {
			t.Fatalf("step %d: %s refused", i, s.newcomer)
		}
		if ev := evicted(); len(ev) != 1 || ev[0] != s.want {
			t.Fatalf("step %d: newcomer %s evicted %v, want %s", i, s.newcomer, ev, s.want)
		}
		if i == 0 && !first.Conn.(*gateConn).closed {
			t.Fatalf("the busy connection stalled longest was not the one closed")
		}
	}
	// 127.31 holds 2 busy ones; one idle among them goes first.
	for gc, a := range conns {
		if a == "127.31.0.4" {
			g.connState(gc, http.StateIdle)
		}
	}
	admit("127.41.0.1", http.StateActive)
	if ev := evicted(); len(ev) != 1 || ev[0] != "127.31.0.4" {
		t.Fatalf("evicted %v, want the idle 127.31.0.4", ev)
	}
	// Every network now holds one busy connection: nothing may be closed.
	if gc := admit("127.42.0.1", http.StateActive); gc != nil {
		t.Fatalf("newcomer admitted over lone busy connections: %v evicted", evicted())
	}
}

// TestGatePerAddressEvictsBusy: an address at its cap with every
// connection busy makes room for its newcomer by closing the one of its
// own stalled longest, and never one of another address.
func TestGatePerAddressEvictsBusy(t *testing.T) {
	clock := time.Unix(1e9, 0)
	g := newConnGate(nil, Config{MaxConns: 10, MaxConnsPerAddr: 3}, newTestMetrics())
	g.now = func() time.Time { clock = clock.Add(time.Second); return clock }
	var mine []*gatedConn
	for range 3 {
		gc := g.admit(&gateConn{addr: "127.50.0.1"})
		g.connState(gc, http.StateActive)
		mine = append(mine, gc)
	}
	other := g.admit(&gateConn{addr: "127.51.0.1"})
	g.connState(other, http.StateIdle)
	// The first made progress since: the second is stalled longest.
	_, _ = mine[0].Write([]byte("x"))
	if g.admit(&gateConn{addr: "127.50.0.1"}) == nil {
		t.Fatal("newcomer refused at its address's cap")
	}
	for i, gc := range mine {
		if closed := gc.Conn.(*gateConn).closed; closed != (i == 1) {
			t.Fatalf("connection %d closed %v", i, closed)
		}
	}
	if other.Conn.(*gateConn).closed {
		t.Fatal("another address's idle connection was closed for the per-address cap")
	}
}
