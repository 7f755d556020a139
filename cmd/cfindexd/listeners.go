package main

import (
	"fmt"
	"net"
)

// listeners are the daemon's HTTP and P2P sockets, bound before anything
// else runs so that a port another process holds stops cfindexd at start
// with one line, and so that both serve from the first second, before the
// node answers. A nil listener means that server is off.
type listeners struct {
	http, p2p net.Listener
}

// bindListeners binds httplisten and listen (each may be empty: off).
func bindListeners(cfg Config) (*listeners, error) {
	l := &listeners{}
	if cfg.HTTPListen != "" {
		ln, err := net.Listen("tcp", cfg.HTTPListen)
		if err != nil {
			return nil, fmt.Errorf("httplisten %s: %w", cfg.HTTPListen, err)
		}
		l.http = ln
	}
	if cfg.Listen != "" {
		ln, err := net.Listen("tcp", cfg.Listen)
		if err != nil {
			l.close()
			return nil, fmt.Errorf("listen %s: %w", cfg.Listen, err)
		}
		l.p2p = ln
	}
	return l, nil
}

// takeHTTP and takeP2P hand a listener to its server, which closes it.
func (l *listeners) takeHTTP() net.Listener { ln := l.http; l.http = nil; return ln }
func (l *listeners) takeP2P() net.Listener  { ln := l.p2p; l.p2p = nil; return ln }

// close closes the listeners no server took.
func (l *listeners) close() {
	if l.http != nil {
		_ = l.http.Close()
	}
	if l.p2p != nil {
		_ = l.p2p.Close()
	}
}
