package main

import (
	"fmt"
	"runtime/debug"

	"github.com/rs/zerolog"
)

// guarded wraps the body of a goroutine the daemon owns (the follower, the
// HTTP and P2P servers' Run, the ZMQ subscriber, the store-size reporter,
// runDaemon itself) so that a panic in it is logged at error with its stack
// and returned as an error, "<name> panicked: <value>". The errgroup then
// stops the other parts and main prints that one line and exits 1;
// systemd's Restart=on-failure starts it again. None of these goroutines
// can carry on after a panic with state one could trust, so each ends the
// daemon. Panics that concern one client only are recovered where they
// happen instead and the daemon goes on: an HTTP handler's (package httpapi
// answers 500) and a P2P peer's (package p2p drops the peer).
func guarded(log zerolog.Logger, name string, fn func() error) func() error {
	return func() (err error) {
		defer func() {
			if v := recover(); v != nil {
				log.Error().Str("part", name).Str("panic", fmt.Sprint(v)).Str("stack", string(debug.Stack())).
					Msg("panic; stopping the daemon")
				err = fmt.Errorf("%s panicked: %v", name, v)
			}
		}()
		return fn()
	}
}
