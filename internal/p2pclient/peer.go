package p2pclient

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Frame limits.
const (
	headerSize = wire.MessageHeaderSize
	// maxUnknownPayload is Core's MAX_PROTOCOL_MESSAGE_LENGTH.
	maxUnknownPayload = 4_000_000
	// DefaultTimeout bounds the handshake and every read.
	DefaultTimeout = 30 * time.Second
)

// Errors callers act on.
var (
	// ErrMissingServices: the peer does not advertise a required service.
	ErrMissingServices = errors.New("p2pclient: peer lacks a required service")
	// ErrProtocol: the peer sent something malformed or unexpected.
	ErrProtocol = errors.New("p2pclient: protocol violation by peer")
	// ErrNotFound: the peer answered notfound.
	ErrNotFound = errors.New("p2pclient: peer does not have the data")
)

// Options configure Dial.
type Options struct {
	// Params select the network magic; required.
	Params *chaincfg.Params
	// Services we advertise (a light client: none, or NODE_WITNESS).
	Services wire.ServiceFlag
	// Require are services the peer must advertise (ErrMissingServices).
	Require wire.ServiceFlag
	// Relay is the version message's fRelay: whether the peer may announce
	// transactions before a filter is loaded.
	Relay bool
	// UserAgent is sent in version; default "/cfindexd-p2pclient:0.1/".
	UserAgent string
	// Timeout bounds the handshake and each read and write;
	// DefaultTimeout when zero.
	Timeout time.Duration
	// Transport is v1 (the zero value), v2 or auto: see Transport.
	Transport Transport
}

// Peer is one connection to a full node (or cfindexd), on a Conn.
type Peer struct {
	c       *Conn
	timeout time.Duration
	version wire.MsgVersion
}

// Dial connects to addr and completes the version handshake.
func Dial(ctx context.Context, addr string, opts Options) (*Peer, error) {
	if opts.Params == nil {
		return nil, fmt.Errorf("p2pclient: dial %s: no chain parameters", addr)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	c, err := DialConn(ctx, addr, opts.Params.Net, ConnOptions{Timeout: opts.Timeout, Transport: opts.Transport})
	if err != nil {
		return nil, fmt.Errorf("p2pclient: %w", err)
	}
	p := &Peer{c: c, timeout: opts.Timeout}
	err = p.withCtx(ctx, c.SetDeadline, func() error {
		var err error
		p.version, err = c.Handshake(HandshakeOptions{
			Services: opts.Services, Require: opts.Require, Relay: opts.Relay, UserAgent: opts.UserAgent,
		})
		return err
	})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("p2pclient: handshake with %s: %w", addr, err)
	}
	return p, nil
}

// Transport is the transport the connection speaks, TransportV1 or
// TransportV2.
func (p *Peer) Transport() Transport { return p.c.Transport() }

// Version is the peer's version message.
func (p *Peer) Version() wire.MsgVersion { return p.version }

// BytesRead and BytesWritten count every byte of every frame, headers
// included, since Dial.
func (p *Peer) BytesRead() int64 { return p.c.BytesRead() }

// BytesWritten: see BytesRead.
func (p *Peer) BytesWritten() int64 { return p.c.BytesWritten() }

// Close closes the connection.
func (p *Peer) Close() error { return p.c.Close() }

// deadline applies the earlier of ctx's deadline and now+timeout.
func (p *Peer) deadline(ctx context.Context) time.Time {
	d := time.Now().Add(p.timeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		d = cd
	}
	return d
}

// withCtx runs io with the connection's deadline set from ctx, and makes a
// cancelled ctx interrupt it.
func (p *Peer) withCtx(ctx context.Context, set func(time.Time) error, io func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := set(p.deadline(ctx)); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = set(time.Unix(1, 0)) })
	err := io()
	if !stop() && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// Send writes msg (witness encoding, which equals the base encoding for
// every message but tx and block) and flushes.
func (p *Peer) Send(ctx context.Context, msg wire.Message) error {
	return p.withCtx(ctx, p.c.SetWriteDeadline, func() error {
		if err := p.c.Send(msg); err != nil {
			return fmt.Errorf("p2pclient: %w", err)
		}
		return nil
	})
}

// ReadFrame returns the next frame, answering pings on the way.
func (p *Peer) ReadFrame(ctx context.Context) (Frame, error) {
	var f Frame
	err := p.withCtx(ctx, p.c.SetDeadline, func() error {
		var err error
		f, err = p.c.ReadFrame()
		if err != nil {
			return fmt.Errorf("p2pclient: %w", err)
		}
		return nil
	})
	return f, err
}

// Sync sends a ping and returns every frame (other than pings) received
// before its pong. A peer answers messages in order, so those frames are
// everything it sent in answer to earlier requests.
func (p *Peer) Sync(ctx context.Context) ([]Frame, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	nonce := binary.LittleEndian.Uint64(b[:])
	if err := p.Send(ctx, wire.NewMsgPing(nonce)); err != nil {
		return nil, err
	}
	var frames []Frame
	for {
		f, err := p.ReadFrame(ctx)
		if err != nil {
			return frames, err
		}
		if f.Command == wire.CmdPong && len(f.Payload) == 8 && binary.LittleEndian.Uint64(f.Payload) == nonce {
			return frames, nil
		}
		frames = append(frames, f)
	}
}

// readCommand reads frames until one with command cmd arrives (others are
// dropped, notfound is ErrNotFound) and returns it.
func (p *Peer) readCommand(ctx context.Context, cmd string) (Frame, error) {
	for {
		f, err := p.ReadFrame(ctx)
		if err != nil {
			return Frame{}, err
		}
		switch f.Command {
		case cmd:
			return f, nil
		case wire.CmdNotFound:
			return Frame{}, fmt.Errorf("%w (waiting for %s)", ErrNotFound, cmd)
		}
	}
}
