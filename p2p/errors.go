package p2p

import (
	"errors"
	"fmt"
)

// ErrNotFound is what a ChainView returns for a hash or height it does not
// hold. Handlers treat it as "unknown", every other error as a failure of the
// view.
var ErrNotFound = errors.New("p2p: not found")

// ErrUnknownChain is returned by DefaultPort for a chain name it does not know.
var ErrUnknownChain = errors.New("p2p: unknown chain")

// ErrBadConfig is wrapped by Config.Validate for every invalid setting.
var ErrBadConfig = errors.New("p2p: invalid config")

// ErrMisbehaving is wrapped by every error that means the peer broke the
// protocol: the server disconnects it and bans its IP for
// Config.BanDuration.
var ErrMisbehaving = errors.New("misbehaving peer")

// errDisconnect is wrapped by errors that end a connection without a ban
// (timeouts, closed sockets, a full server).
var errDisconnect = errors.New("disconnect")

// misbehaving returns an error wrapping ErrMisbehaving with a reason.
func misbehaving(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMisbehaving, fmt.Sprintf(format, args...))
}
