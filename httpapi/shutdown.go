package httpapi

import (
	"net"
	"net/http"
	"sync"
)

// unstartedConns tracks the connections that have not sent a whole request
// yet (http.StateNew), so that a shutdown can close them at once.
//
// http.Server.Shutdown closes idle keep-alive connections immediately but
// waits for a new connection until it is five seconds old or has sent a
// request, polling every up to 500 ms. Clients open such connections all
// the time — an HTTP client that dials a spare connection while its
// request goes out on one that just became free keeps the spare unused,
// a browser preconnects, a load balancer probes — so a SIGTERM at the tip
// took 2.6–4.2 s waiting for connections that carried no request. No
// request is in flight on them, so closing them loses nothing; requests in
// flight still get Config.ShutdownTimeout.
type unstartedConns struct {
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	shutdown bool
}

func newUnstartedConns() *unstartedConns {
	return &unstartedConns{conns: make(map[net.Conn]struct{})}
}

// track is the http.Server's ConnState hook.
func (u *unstartedConns) track(c net.Conn, state http.ConnState) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if state != http.StateNew {
		delete(u.conns, c)
		return
	}
	if u.shutdown {
		// Accepted while shutting down: nothing will serve it.
		_ = c.Close()
		return
	}
	u.conns[c] = struct{}{}
}

// closeAll closes every connection that has not sent a request yet, and
// any accepted from now on.
func (u *unstartedConns) closeAll() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.shutdown = true
	for c := range u.conns {
		_ = c.Close()
		delete(u.conns, c)
	}
}
