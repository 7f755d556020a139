package httpapi

import (
	"context"
	"net"
	"net/http"
	"time"
)

// connContextKey is the request context key of the connection a request
// arrived on (a *gatedConn), set by the server's ConnContext.
type connContextKey struct{}

// shutdownContextKey is the request context key of a channel closed when
// the server starts shutting down, set by the server's BaseContext.
type shutdownContextKey struct{}

// withShutdown records in ctx the channel closed when the server starts
// shutting down: a request still waiting in awaitAnswerSent then gives up
// instead of holding the graceful shutdown for a whole window.
func withShutdown(ctx context.Context, shutdown <-chan struct{}) context.Context {
	return context.WithValue(ctx, shutdownContextKey{}, shutdown)
}

// withConn is the http.Server's ConnContext: it records c in the
// connection's context for awaitAnswerSent.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connContextKey{}, c)
}

// Bounds of the interval at which awaitAnswerSent looks at the send queue
// again: the first look is at once, and a client that reads finds its
// pipelined request answered within about the time its previous answer
// takes to leave.
const (
	sentPollFirst = time.Millisecond
	sentPollMax   = 50 * time.Millisecond
)

// awaitAnswerSent waits, before a request is answered, until the kernel
// has sent everything written to its connection before (the answers to
// the requests before it), or until deadline (false). net/http reads a
// pipelined request only once the answer before it is written to the
// socket, but the socket's send buffer takes megabytes at once on a fast
// path, so without the wait a client that pipelines requests and reads
// none would have the server build one answer after another into it: the
// CPU of dozens of answers per connection, and the kernel's memory of
// them, pressing on every other socket. With it, such a client gets one
// answer built, then its connection is closed at the end of the minimum
// rate's window. A client that reads waits at most about the time its
// previous answer takes to leave; one that sends its next request after
// reading the answer (no pipelining) never waits. The wait ends (false)
// when the server starts shutting down. A request without a
// connection of ours (tests calling the handler), or off Linux, does not
// wait.
func awaitAnswerSent(r *http.Request, deadline time.Time) bool {
	c, ok := r.Context().Value(connContextKey{}).(*gatedConn)
	if !ok {
		return true
	}
	shutdown, _ := r.Context().Value(shutdownContextKey{}).(<-chan struct{}) // nil: never
	wait := sentPollFirst
	for {
		n, ok := unsentBytes(c.Conn)
		if !ok || n == 0 {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		t := time.NewTimer(min(wait, left))
		select {
		case <-r.Context().Done():
			t.Stop()
			return false
		case <-shutdown:
			t.Stop()
			return false
		case <-t.C:
		}
		wait = min(2*wait, sentPollMax)
	}
}
