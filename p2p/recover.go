package p2p

import (
	"fmt"
	"runtime/debug"
)

// errPanic ends a peer one of whose goroutines panicked.
var errPanic = fmt.Errorf("%w: recovered panic", errDisconnect)

// recoverPeer turns a panic in one of the peer's goroutines (where names
// it) into *err wrapping errPanic: logged at error with the stack, counted,
// and the peer disconnected, while the process and the other peers go on.
// Use it deferred: defer p.recoverPeer("reader", &err).
func (p *peer) recoverPeer(where string, err *error) {
	r := recover()
	if r == nil {
		return
	}
	p.srv.metrics.PeerPanicked()
	p.log.Error().Str("goroutine", where).Str("panic", fmt.Sprint(r)).Str("stack", string(debug.Stack())).
		Msg("recovered a panic serving a peer; disconnecting it")
	*err = fmt.Errorf("%w in %s: %v", errPanic, where, r)
}
