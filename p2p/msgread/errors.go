package msgread

import (
	"errors"
	"fmt"
)

// ErrMisbehaving is wrapped by every error that means the peer broke the
// protocol: a malformed message, a frame over its command's cap, a wrong
// magic. (p2p.ErrMisbehaving is this error.)
var ErrMisbehaving = errors.New("misbehaving peer")

// misbehaving returns an error wrapping ErrMisbehaving with a reason.
func misbehaving(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMisbehaving, fmt.Sprintf(format, args...))
}

// NotServedError is the error of a BIP-37 message read while BIP-37
// serving is off (State.Bloom false): Core disconnects such a peer,
// without penalty, when it does not offer NODE_BLOOM.
type NotServedError struct{ Command string }

func (e *NotServedError) Error() string { return e.Command + " is not served (no NODE_BLOOM)" }
