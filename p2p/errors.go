package p2p

import (
	"errors"
	"fmt"

	"github.com/cfindexd/cfindexd/p2p/msgread"
	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
)

// ErrNotFound is what a ChainView returns for a hash or height it does not
// hold. Handlers treat it as "unknown", every other error as a failure of the
// view.
var ErrNotFound = errors.New("p2p: not found")

// ErrCorrupt is what a ChainView error wraps when the view's data is
// damaged: the operator has to act (the error should say how), so the
// server logs the failed request at error rather than warn.
var ErrCorrupt = errors.New("p2p: chain view is corrupt")

// ErrBadConfig is wrapped by Config.Validate for every invalid setting.
var ErrBadConfig = errors.New("p2p: invalid config")

// ErrMisbehaving is wrapped by every error that means the peer broke the
// protocol after the handshake (a malformed message, a frame over its
// command's cap, a wrong magic): the server disconnects it and discourages
// its address (peerpolicy.Discouragement).
var ErrMisbehaving = msgread.ErrMisbehaving

// errDisconnect is wrapped by errors that end a connection without a
// penalty (timeouts, closed sockets, invalid requests, anything before the
// handshake completes).
var errDisconnect = errors.New("disconnect")

// errSendStalled ends a peer whose send queue stayed full, without a
// single frame written, for Config.SendStallTimeout: it does not read.
var errSendStalled = fmt.Errorf("%w: %w", errDisconnect, peerpolicy.ErrSendStalled)

// errInvalidRequest marks a well-formed request the server refuses: a
// BIP-157 range over the limit or backwards, an unknown filter type, too
// many locator hashes, a BIP-37 message. Core disconnects such a peer
// without penalty, since a buggy wallet is not an attacker; so does this
// server. It wraps errDisconnect.
var errInvalidRequest = fmt.Errorf("%w: invalid request", errDisconnect)

// invalidRequest returns an error wrapping errInvalidRequest with a reason.
func invalidRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errInvalidRequest, fmt.Sprintf(format, args...))
}
