package p2pclient

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
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
}

// Peer is one connection to a full node (or cfindexd).
type Peer struct {
	conn    net.Conn
	r       *bufio.Reader
	w       *bufio.Writer
	net     wire.BitcoinNet
	pver    uint32
	timeout time.Duration
	version wire.MsgVersion
	hdr     [headerSize]byte

	bytesRead, bytesWritten int64
}

// Frame is one message read off the wire, checksum verified.
type Frame struct {
	Command string
	Payload []byte
}

// Size is the frame's size on the wire.
func (f Frame) Size() int { return headerSize + len(f.Payload) }

// Dial connects to addr and completes the version handshake.
func Dial(ctx context.Context, addr string, opts Options) (*Peer, error) {
	if opts.Params == nil {
		return nil, fmt.Errorf("p2pclient: dial %s: no chain parameters", addr)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "/cfindexd-p2pclient:0.1/"
	}
	d := net.Dialer{Timeout: opts.Timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("p2pclient: dial %s: %w", addr, err)
	}
	p := &Peer{
		conn:    conn,
		r:       bufio.NewReaderSize(conn, 64<<10),
		w:       bufio.NewWriterSize(conn, 16<<10),
		net:     opts.Params.Net,
		pver:    wire.ProtocolVersion,
		timeout: opts.Timeout,
	}
	if err := p.handshake(ctx, opts); err != nil {
		conn.Close()
		return nil, fmt.Errorf("p2pclient: handshake with %s: %w", addr, err)
	}
	return p, nil
}

func (p *Peer) handshake(ctx context.Context, opts Options) error {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	me := wire.NewNetAddressIPPort(net.IPv4(127, 0, 0, 1), 0, opts.Services)
	you := wire.NewNetAddressIPPort(net.IPv4(127, 0, 0, 1), 0, 0)
	v := wire.NewMsgVersion(me, you, binary.LittleEndian.Uint64(nonce[:]), 0)
	v.Services = opts.Services
	v.UserAgent = opts.UserAgent
	v.DisableRelayTx = !opts.Relay
	if err := p.Send(ctx, v); err != nil {
		return err
	}
	gotVersion, gotVerack := false, false
	for !gotVersion || !gotVerack {
		f, err := p.ReadFrame(ctx)
		if err != nil {
			return err
		}
		switch f.Command {
		case wire.CmdVersion:
			if err := p.version.BtcDecode(bytes.NewBuffer(f.Payload), wire.ProtocolVersion, wire.BaseEncoding); err != nil {
				return fmt.Errorf("%w: version: %v", ErrProtocol, err)
			}
			if missing := opts.Require &^ p.version.Services; missing != 0 {
				return fmt.Errorf("%w: %v (it offers %v)", ErrMissingServices, missing, p.version.Services)
			}
			p.pver = min(p.pver, uint32(p.version.ProtocolVersion))
			gotVersion = true
			if err := p.Send(ctx, wire.NewMsgVerAck()); err != nil {
				return err
			}
		case wire.CmdVerAck:
			gotVerack = true
		}
	}
	return nil
}

// Version is the peer's version message.
func (p *Peer) Version() wire.MsgVersion { return p.version }

// BytesRead and BytesWritten count every byte of every frame, headers
// included, since Dial.
func (p *Peer) BytesRead() int64 { return p.bytesRead }

// BytesWritten: see BytesRead.
func (p *Peer) BytesWritten() int64 { return p.bytesWritten }

// Close closes the connection.
func (p *Peer) Close() error { return p.conn.Close() }

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
	return p.withCtx(ctx, p.conn.SetWriteDeadline, func() error {
		n, err := wire.WriteMessageWithEncodingN(p.w, msg, p.pver, p.net, wire.WitnessEncoding)
		p.bytesWritten += int64(n)
		if err == nil {
			err = p.w.Flush()
		}
		if err != nil {
			return fmt.Errorf("p2pclient: send %s: %w", msg.Command(), err)
		}
		return nil
	})
}

// maxPayload is the cap of a command's payload.
func maxPayload(cmd string) uint32 {
	switch cmd {
	case wire.CmdBlock, wire.CmdTx:
		return wire.MaxBlockPayload
	case wire.CmdMerkleBlock:
		// Header, count, 16,666 hashes and their flag bits.
		return 80 + 4 + 9 + 16_666*chainhash.HashSize + 9 + (2*16_666+7)/8
	case wire.CmdHeaders:
		return 9 + wire.MaxBlockHeadersPerMsg*(wire.MaxBlockHeaderPayload+1)
	case wire.CmdCFilter:
		return 1 + chainhash.HashSize + 9 + wire.MaxCFilterDataSize
	case wire.CmdCFHeaders:
		return 1 + 2*chainhash.HashSize + 9 + wire.MaxCFHeadersPerMsg*chainhash.HashSize
	case wire.CmdPing, wire.CmdPong:
		return 8
	case wire.CmdVersion:
		return 1024
	}
	return maxUnknownPayload
}

// ReadFrame returns the next frame, answering pings on the way.
func (p *Peer) ReadFrame(ctx context.Context) (Frame, error) {
	for {
		var f Frame
		err := p.withCtx(ctx, p.conn.SetReadDeadline, func() error {
			var err error
			f, err = p.readFrame()
			return err
		})
		if err != nil {
			return Frame{}, err
		}
		if f.Command == wire.CmdPing {
			var ping wire.MsgPing
			if err := ping.BtcDecode(bytes.NewReader(f.Payload), p.pver, wire.BaseEncoding); err != nil {
				return Frame{}, fmt.Errorf("%w: ping: %v", ErrProtocol, err)
			}
			if err := p.Send(ctx, wire.NewMsgPong(ping.Nonce)); err != nil {
				return Frame{}, err
			}
			continue
		}
		return f, nil
	}
}

func (p *Peer) readFrame() (Frame, error) {
	if _, err := io.ReadFull(p.r, p.hdr[:]); err != nil {
		return Frame{}, fmt.Errorf("p2pclient: read frame header: %w", err)
	}
	p.bytesRead += headerSize
	if magic := wire.BitcoinNet(binary.LittleEndian.Uint32(p.hdr[0:4])); magic != p.net {
		return Frame{}, fmt.Errorf("%w: network magic %v, want %v", ErrProtocol, magic, p.net)
	}
	cmdBytes := p.hdr[4 : 4+wire.CommandSize]
	end := bytes.IndexByte(cmdBytes, 0)
	if end < 0 {
		end = len(cmdBytes)
	}
	for i, c := range cmdBytes {
		if i < end && (c < 0x20 || c > 0x7e) || i >= end && c != 0 {
			return Frame{}, fmt.Errorf("%w: malformed command %q", ErrProtocol, cmdBytes)
		}
	}
	cmd := string(cmdBytes[:end])
	n := binary.LittleEndian.Uint32(p.hdr[16:20])
	if n > maxPayload(cmd) {
		return Frame{}, fmt.Errorf("%w: %s of %d bytes exceeds %d", ErrProtocol, cmd, n, maxPayload(cmd))
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(p.r, payload); err != nil {
		return Frame{}, fmt.Errorf("p2pclient: read %s payload: %w", cmd, err)
	}
	p.bytesRead += int64(n)
	if sum := chainhash.DoubleHashB(payload); !bytes.Equal(sum[:4], p.hdr[20:24]) {
		return Frame{}, fmt.Errorf("%w: %s checksum mismatch", ErrProtocol, cmd)
	}
	return Frame{Command: cmd, Payload: payload}, nil
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
