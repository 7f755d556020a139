package v2conn

import (
	"errors"
	"fmt"
)

// ErrMisbehaving is wrapped by every error that means the peer broke
// BIP-324: a garbage prefix without its terminator, a packet that fails
// authentication, a declared length over the cap, a decoy flood. The server
// treats it as it treats msgread.ErrMisbehaving.
var ErrMisbehaving = errors.New("misbehaving v2 peer")

// Conditions a caller may act on besides misbehaviour. Each error of the
// package wraps at most one of them, and the peer faults among them wrap
// ErrMisbehaving too.
var (
	// ErrNoTerminator: the initiator's garbage (at most MaxGarbage bytes)
	// was not followed by its garbage terminator. Wraps ErrMisbehaving.
	ErrNoTerminator = fmt.Errorf("%w: no garbage terminator within %d bytes", ErrMisbehaving, MaxGarbage+TerminatorSize)
	// ErrPacketTooLarge: a packet's length declares contents over the
	// connection's cap (Config.MaxPayload plus the message type). It is
	// checked before anything is read or allocated for the packet. Wraps
	// ErrMisbehaving.
	ErrPacketTooLarge = fmt.Errorf("%w: packet too large", ErrMisbehaving)
	// ErrAuthentication: a packet (or its length) was not sent by the
	// holder of the session keys: a corrupted or injected stream. Wraps
	// ErrMisbehaving.
	ErrAuthentication = fmt.Errorf("%w: packet authentication failed", ErrMisbehaving)
	// ErrDecoyFlood: decoy packets between two messages went over
	// Config.MaxDecoyBytes. Wraps ErrMisbehaving.
	ErrDecoyFlood = fmt.Errorf("%w: decoy packets over the limit", ErrMisbehaving)
	// ErrOverBudget: the peer's receive budget (Config.RecvBudget) could
	// not cover the packet its length announced. A v2 packet cannot be
	// skipped unread without giving up its authentication, so the
	// connection cannot continue; Core would have stopped reading from such
	// a peer. Not misbehaviour by itself.
	ErrOverBudget = errors.New("v2 packet over the peer's receive budget")
	// ErrWrongNetwork: the first bytes are a v1 version header with another
	// network's magic (Core disconnects such a peer).
	ErrWrongNetwork = errors.New("v1 peer of another network")
	// ErrMessageTooLarge: WriteMessage was given a payload over
	// Config.MaxPayload; nothing was sent.
	ErrMessageTooLarge = errors.New("v2 message too large to send")
	// ErrV1Only: the responder hung up before sending a byte of its key,
	// as a peer that speaks only v1 does when our key reaches it as a
	// malformed v1 header; connecting again over v1 may succeed. Not
	// misbehaviour.
	ErrV1Only = errors.New("v2 responder hung up before its key (v1 only?)")
	// ErrBadCommand: WriteMessage was given a command that is empty,
	// longer than 12 bytes or not printable ASCII; nothing was sent.
	ErrBadCommand = errors.New("malformed command")
)
