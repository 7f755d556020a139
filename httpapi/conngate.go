package httpapi

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// clientKey is what the per-address limits count by: an IPv4 address, or
// the /64 an IPv6 address is in (one subscriber usually holds a whole /64,
// as the P2P limits assume). Loopback and IPv4-mapped IPv6 count as IPv4.
type clientKey = netip.Addr

// clientKeyOf returns the key of a remote address ("ip:port" or a
// net.Addr's String). An address that does not parse (a Unix socket in
// tests) gets the zero key: such clients share one set of limits.
func clientKeyOf(remote string) clientKey {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return clientKey{}
	}
	a := ap.Addr().Unmap()
	if a.Is6() {
		a = netip.PrefixFrom(a.WithZone(""), 64).Masked().Addr()
	}
	return a
}

// networkOf returns the network a client key belongs to, as the P2P side
// groups peers: the IPv4 /16 or the IPv6 /32. The zero key is its own
// network.
func networkOf(k clientKey) netip.Addr {
	switch {
	case k.Is4():
		return netip.PrefixFrom(k, 16).Masked().Addr()
	case k.Is6():
		return netip.PrefixFrom(k, 32).Masked().Addr()
	}
	return k
}

// refusalResponse is what a connection over the caps gets before it is
// closed: written straight to the socket, whose send buffer is empty, so
// it never blocks the accept loop.
var refusalResponse = []byte("HTTP/1.1 503 Service Unavailable\r\n" +
	"Content-Type: text/plain; charset=utf-8\r\n" +
	"Retry-After: 5\r\n" +
	"Connection: close\r\n" +
	"Content-Length: 21\r\n\r\n" +
	"too many connections\n")

// refusalWriteTimeout bounds the write of refusalResponse in case a
// socket's buffer is somehow full.
const refusalWriteTimeout = 50 * time.Millisecond

// connGate is a net.Listener that enforces Config.MaxConns and
// MaxConnsPerAddr when it accepts. Over a cap it makes room by closing one
// connection (pickVictim) of the network (IPv4 /16, IPv6 /32), then the
// address, holding the most connections: an idle one if it can (between
// keep-alive requests, or not yet sent a request: http.Server reports both
// through ConnState), else one busy with a request, the one that made no
// write progress longest. A busy connection alone in its network is never
// closed, nor one of the newcomer's network unless that network holds the
// most: a network that crowds the server out loses its connections first,
// and its churn cannot close a newcomer of a smaller one. If nothing can
// be closed, the new connection gets refusalResponse and is closed in the
// accept loop itself: a flood of refused connections costs no goroutine
// and no file descriptor beyond the moment of refusal.
type connGate struct {
	net.Listener
	maxConns, maxPerAddr int
	metrics              Observer
	now                  func() time.Time

	mu     sync.Mutex
	conns  map[*gatedConn]struct{}
	byAddr map[clientKey]int
	byNet  map[netip.Addr]int
}

func newConnGate(ln net.Listener, cfg Config, m Observer) *connGate {
	return &connGate{
		Listener:   ln,
		maxConns:   cfg.MaxConns,
		maxPerAddr: cfg.MaxConnsPerAddr,
		metrics:    m,
		now:        time.Now,
		conns:      make(map[*gatedConn]struct{}),
		byAddr:     make(map[clientKey]int),
		byNet:      make(map[netip.Addr]int),
	}
}

// gatedConn is a connection the gate admitted. Its state and since (when
// it entered that state) are guarded by the gate's mu; lastWrite is when a
// write to it last returned having written something (Unix nanoseconds).
type gatedConn struct {
	net.Conn
	gate      *connGate
	key       clientKey
	network   netip.Addr
	state     http.ConnState
	since     time.Time
	lastWrite atomic.Int64
	released  atomic.Bool
}

// Write writes to the connection and notes the progress.
func (c *gatedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.lastWrite.Store(c.gate.now().UnixNano())
	}
	return n, err
}

// stalledSince is when c last made progress: entered its state, or wrote.
// Caller holds the gate's mu.
func (c *gatedConn) stalledSince() time.Time {
	if w := time.Unix(0, c.lastWrite.Load()); w.After(c.since) {
		return w
	}
	return c.since
}

// Close closes the connection and gives its place back.
func (c *gatedConn) Close() error {
	c.gate.release(c)
	return c.Conn.Close()
}

// Accept returns the next connection within the caps, refusing the others
// on the way.
func (g *connGate) Accept() (net.Conn, error) {
	for {
		c, err := g.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if gc := g.admit(c); gc != nil {
			return gc, nil
		}
	}
}

// admit registers c if the caps allow, closing an evictable connection to
// make room when needed; otherwise it refuses c and returns nil.
func (g *connGate) admit(c net.Conn) *gatedConn {
	key := clientKeyOf(c.RemoteAddr().String())
	network := networkOf(key)
	g.mu.Lock()
	var (
		victim *gatedConn
		reason string
	)
	switch {
	case g.byAddr[key] >= g.maxPerAddr:
		reason = "per_address"
		victim = g.pickVictim(network, func(v *gatedConn) bool { return v.key == key })
	case len(g.conns) >= g.maxConns:
		reason = "total"
		victim = g.pickVictim(network, func(*gatedConn) bool { return true })
	}
	if reason != "" && victim == nil {
		g.mu.Unlock()
		g.refuse(c, reason)
		return nil
	}
	if victim != nil {
		g.releaseLocked(victim)
	}
	gc := &gatedConn{Conn: c, gate: g, key: key, network: network, state: http.StateNew, since: g.now()}
	g.conns[gc] = struct{}{}
	g.byAddr[key]++
	g.byNet[network]++
	open := len(g.conns)
	g.mu.Unlock()
	g.metrics.HTTPConnsOpen(open)
	if victim != nil {
		g.metrics.HTTPConnEvicted(reason)
		// Closing wakes the server goroutine blocked reading it; its own
		// Close later finds the place already given back.
		_ = victim.Conn.Close()
	}
	return gc
}

// pickVictim returns the connection among those ok accepts to close for
// a newcomer from network, or nil if none may be closed: from the network
// holding the most connections (the newcomer's last among equals), the
// address holding the most within it, an idle one before a busy one, the
// one idle or stalled longest. A busy connection alone in its network is
// never closed. Caller holds mu.
func (g *connGate) pickVictim(network netip.Addr, ok func(*gatedConn) bool) *gatedConn {
	var best *gatedConn
	for c := range g.conns {
		if !ok(c) || !c.idle() && g.byNet[c.network] <= 1 {
			continue
		}
		if best == nil || g.before(c, best, network) {
			best = c
		}
	}
	return best
}

// idle reports whether c waits between requests or for its first one.
// Caller holds the gate's mu.
func (c *gatedConn) idle() bool { return c.state == http.StateNew || c.state == http.StateIdle }

// before reports whether a is a better victim than b for a newcomer from
// network.
func (g *connGate) before(a, b *gatedConn, network netip.Addr) bool {
	if na, nb := g.byNet[a.network], g.byNet[b.network]; na != nb {
		return na > nb
	}
	if oa, ob := a.network == network, b.network == network; oa != ob {
		return ob
	}
	if na, nb := g.byAddr[a.key], g.byAddr[b.key]; na != nb {
		return na > nb
	}
	if ia, ib := a.idle(), b.idle(); ia != ib {
		return ia
	}
	return a.stalledSince().Before(b.stalledSince())
}

// refuse answers c with refusalResponse and closes it.
func (g *connGate) refuse(c net.Conn, reason string) {
	g.metrics.HTTPConnRefused(reason)
	_ = c.SetWriteDeadline(g.now().Add(refusalWriteTimeout))
	_, _ = c.Write(refusalResponse)
	_ = c.Close()
}

// release gives c's place back, once.
func (g *connGate) release(c *gatedConn) {
	g.mu.Lock()
	g.releaseLocked(c)
	open := len(g.conns)
	g.mu.Unlock()
	g.metrics.HTTPConnsOpen(open)
}

func (g *connGate) releaseLocked(c *gatedConn) {
	if c.released.Swap(true) {
		return
	}
	delete(g.conns, c)
	if g.byAddr[c.key]--; g.byAddr[c.key] <= 0 {
		delete(g.byAddr, c.key)
	}
	if g.byNet[c.network]--; g.byNet[c.network] <= 0 {
		delete(g.byNet, c.network)
	}
}

// connState is the http.Server's ConnState hook: it records which
// connections are idle and since when.
func (g *connGate) connState(c net.Conn, state http.ConnState) {
	gc, ok := c.(*gatedConn)
	if !ok {
		return
	}
	g.mu.Lock()
	gc.state, gc.since = state, g.now()
	g.mu.Unlock()
}
