package p2pclient

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/btcsuite/btcd/wire/v2"
)

// HandshakeOptions are what we say in our version message and what we
// require of the peer's.
type HandshakeOptions struct {
	// Services we advertise (a light client: none, or NODE_WITNESS).
	Services wire.ServiceFlag
	// Require are services the peer must advertise (ErrMissingServices).
	Require wire.ServiceFlag
	// Relay is the version message's fRelay: whether the peer may announce
	// transactions before a filter is loaded.
	Relay bool
	// Nonce is the version message's nonce; random when zero.
	Nonce uint64
	// UserAgent is sent in version as it is; DefaultUserAgent when empty.
	UserAgent string
	// BeforeVerack are sent after the peer's version and before our
	// verack: the feature negotiation that must precede it (BIP-155's
	// sendaddrv2, BIP-339's wtxidrelay), or whatever a test sends there.
	BeforeVerack []wire.Message
	// Strict makes any frame other than version, verack and reject before
	// the peer's verack an ErrProtocol; else such frames are skipped
	// (btcd sends more during its handshake).
	Strict bool
	// Timeout bounds the whole handshake (the connection's deadline is
	// cleared after it); when zero the caller's deadlines apply.
	Timeout time.Duration
}

// DefaultUserAgent is the user agent of a version message without one.
const DefaultUserAgent = "/cfindexd-p2pclient:0.1/"

// Errors of the handshake.
var (
	// ErrRejected: the peer answered our version with reject.
	ErrRejected = errors.New("p2pclient: peer rejected our version")
	// ErrNoVersion: the peer sent no frame before the handshake failed
	// (it hung up, fell silent, or spoke another protocol), which says
	// more about what listens at the address than about the handshake.
	ErrNoVersion = errors.New("p2pclient: peer sent no version message")
)

// WrongMagicError is a frame whose network magic is not ours. It is an
// ErrProtocol.
type WrongMagicError struct {
	Got, Want wire.BitcoinNet
	// Raw are the frame's first four bytes ("HTTP" from an HTTP server).
	Raw [4]byte
}

func (e *WrongMagicError) Error() string {
	return fmt.Sprintf("%s: network magic %v, want %v", ErrProtocol, e.Got, e.Want)
}

// Is makes a wrong magic an ErrProtocol.
func (e *WrongMagicError) Is(target error) bool { return target == ErrProtocol }

// VersionMessage is the version message Handshake sends: opts' services,
// nonce, user agent and relay flag, our address unknown, the peer's the
// connection's remote address.
func (c *Conn) VersionMessage(opts HandshakeOptions) *wire.MsgVersion {
	nonce := opts.Nonce
	if nonce == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		nonce = binary.LittleEndian.Uint64(b[:])
	}
	me := wire.NewNetAddressIPPort(net.IPv4zero, 0, opts.Services)
	you := wire.NewNetAddressIPPort(net.IPv4zero, 0, 0)
	if tcp, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok {
		you = wire.NewNetAddressIPPort(tcp.IP, uint16(tcp.Port), 0)
	}
	v := wire.NewMsgVersion(me, you, nonce, 0)
	v.Services = opts.Services
	v.UserAgent = opts.UserAgent
	if v.UserAgent == "" {
		v.UserAgent = DefaultUserAgent
	}
	v.DisableRelayTx = !opts.Relay
	return v
}

// Handshake sends our version, answers the peer's with verack once it
// has checked the required services, and waits for the peer's verack.
// Messages are then encoded with the lower of the two protocol versions.
// It returns the peer's version. A failure before the peer sent any frame
// wraps ErrNoVersion (and the read's error: a *WrongMagicError for a node
// of another network, io.EOF for a hang-up, a timeout for silence).
func (c *Conn) Handshake(opts HandshakeOptions) (wire.MsgVersion, error) {
	var peer wire.MsgVersion
	if opts.Timeout > 0 {
		if err := c.nc.SetDeadline(time.Now().Add(opts.Timeout)); err != nil {
			return peer, err
		}
	}
	if err := c.Send(c.VersionMessage(opts)); err != nil {
		// The peer may have spoken and hung up before our version went
		// out: a frame of another network explains more than the broken
		// pipe.
		if c.v2 != nil {
			return peer, fmt.Errorf("%w: %w", ErrNoVersion, err)
		}
		if _, rerr := c.readHeader(); rerr != nil {
			var wm *WrongMagicError
			if errors.As(rerr, &wm) {
				return peer, fmt.Errorf("%w: %w", ErrNoVersion, rerr)
			}
		}
		return peer, fmt.Errorf("%w: %w", ErrNoVersion, err)
	}
	gotVersion, gotVerack := false, false
	for first := true; !gotVersion || !gotVerack; first = false {
		f, err := c.ReadFrame(wire.CmdVersion, wire.CmdVerAck)
		if err != nil {
			if first {
				return peer, fmt.Errorf("%w: %w", ErrNoVersion, err)
			}
			return peer, err
		}
		switch f.Command {
		case wire.CmdVersion:
			if err := peer.BtcDecode(bytes.NewBuffer(f.Payload), wire.ProtocolVersion, wire.BaseEncoding); err != nil {
				return peer, fmt.Errorf("%w: version: %v", ErrProtocol, err)
			}
			if missing := opts.Require &^ peer.Services; missing != 0 {
				return peer, fmt.Errorf("%w: %v (it offers %v)", ErrMissingServices, missing, peer.Services)
			}
			c.pver = min(c.pver, uint32(peer.ProtocolVersion))
			gotVersion = true
			for _, m := range opts.BeforeVerack {
				if err := c.Send(m); err != nil {
					return peer, err
				}
			}
			if err := c.Send(wire.NewMsgVerAck()); err != nil {
				return peer, err
			}
		case wire.CmdVerAck:
			gotVerack = true
		case wire.CmdReject:
			return peer, ErrRejected
		default:
			if opts.Strict {
				return peer, fmt.Errorf("%w: %s during the handshake", ErrProtocol, f.Command)
			}
		}
	}
	if opts.Timeout > 0 {
		return peer, c.nc.SetDeadline(time.Time{})
	}
	return peer, nil
}
