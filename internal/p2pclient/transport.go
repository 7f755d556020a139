package p2pclient

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/p2p/v2conn"
	"github.com/cfindexd/cfindexd/wireframe"
)

// Transport is how a connection's messages travel.
type Transport int

const (
	// TransportV1 is Bitcoin's plaintext framing (the zero value).
	TransportV1 Transport = iota
	// TransportV2 is BIP-324's encrypted transport; a peer that does not
	// speak it fails the dial.
	TransportV2
	// TransportAuto tries v2 and, when the peer hangs up before sending
	// its key (as a v1-only peer does: it reads our key as a malformed
	// v1 header), connects again over v1 — Core's v1 fallback, for an
	// address believed to speak v2. A v1-only peer sees 64 random bytes
	// first: Core and btcd hang up; cfindexd also discourages the
	// address, which it still admits while it has free slots.
	TransportAuto
)

func (t Transport) String() string {
	switch t {
	case TransportV1:
		return "v1"
	case TransportV2:
		return "v2"
	case TransportAuto:
		return "auto"
	}
	return fmt.Sprintf("Transport(%d)", int(t))
}

// ParseTransport reads "v1", "v2" or "auto".
func ParseTransport(s string) (Transport, error) {
	for _, t := range []Transport{TransportV1, TransportV2, TransportAuto} {
		if s == t.String() {
			return t, nil
		}
	}
	return 0, fmt.Errorf("p2pclient: transport %q: want v1, v2 or auto", s)
}

// ErrUntranslatable: WriteRaw over v2 was given bytes that are not v1
// frames of our network (a wrong magic, a malformed command, a declared
// length over the cap), which v2 has no way to carry.
var ErrUntranslatable = errors.New("p2pclient: raw bytes are not a v1 frame v2 can carry")

// v2Config is the v2 configuration of an outbound connection: the
// handshake within timeout, messages capped as the largest ReadFrame
// accepts, random garbage as Core sends.
func v2Config(magic wire.BitcoinNet, opts ConnOptions) v2conn.Config {
	cfg := v2conn.DefaultConfig(magic)
	cfg.HandshakeTimeout = opts.Timeout
	cfg.MaxPayload = maxUnknownPayload
	return cfg
}

// dialTransport dials addr over opts.Transport, falling back to v1 for
// TransportAuto when the peer hangs up before its v2 key.
func dialTransport(ctx context.Context, d *net.Dialer, addr string, magic wire.BitcoinNet, opts ConnOptions) (*Conn, error) {
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if opts.Transport == TransportV1 {
		return NewConn(nc, magic, opts), nil
	}
	// No v1 buffers: over v2 every read and write goes through the v2
	// connection (each method of Conn turns to it first).
	c := &Conn{nc: nc, net: magic, pver: wire.ProtocolVersion, noBlockSum: opts.NoBlockChecksum}
	c.counted = &countingConn{Conn: nc, c: c}
	v2, err := v2conn.Initiate(ctx, c.counted, v2Config(magic, opts))
	if err == nil {
		c.v2 = v2
		return c, nil
	}
	nc.Close()
	if opts.Transport == TransportAuto && errors.Is(err, v2conn.ErrV1Only) {
		opts.Transport = TransportV1
		return dialTransport(ctx, d, addr, magic, opts)
	}
	return nil, fmt.Errorf("%s: %w", addr, err)
}

// countingConn counts the bytes of a v2 connection as they cross the
// socket (the handshake, garbage and decoys included) into its Conn's
// totals.
type countingConn struct {
	net.Conn
	c *Conn
}

func (cc *countingConn) Read(b []byte) (int, error) {
	n, err := cc.Conn.Read(b)
	cc.c.bytesRead += int64(n)
	return n, err
}

func (cc *countingConn) Write(b []byte) (int, error) {
	n, err := cc.Conn.Write(b)
	cc.c.bytesWritten += int64(n)
	return n, err
}

// Transport is the transport the connection speaks: TransportV1 or
// TransportV2 (TransportAuto settles on one at dial).
func (c *Conn) Transport() Transport {
	if c.v2 != nil {
		return TransportV2
	}
	return TransportV1
}

// sendV2 encodes msg's payload and sends it as one v2 message.
func (c *Conn) sendV2(msg wire.Message) error {
	c.enc.Reset()
	if err := msg.BtcEncode(&c.enc, c.pver, wire.WitnessEncoding); err != nil {
		return fmt.Errorf("send %s: %w", msg.Command(), err)
	}
	if _, err := c.v2.WriteMessage(msg.Command(), c.enc.Bytes()); err != nil {
		return fmt.Errorf("send %s: %w", msg.Command(), err)
	}
	return nil
}

// writeRawV2 translates v1 frames written raw into v2 messages: bytes are
// held until a frame is whole, then its command and payload go out as one
// message (a v1 checksum has no place in v2 and is dropped unchecked).
func (c *Conn) writeRawV2(b []byte) error {
	c.rawOut = append(c.rawOut, b...)
	for len(c.rawOut) >= headerSize {
		h := Header(c.rawOut[:headerSize])
		if magic := wire.BitcoinNet(binary.LittleEndian.Uint32(h[:4])); magic != c.net {
			return fmt.Errorf("%w: network magic %v", ErrUntranslatable, magic)
		}
		if !commandValid(h[4:headerSize-8]) || h.Command() == "" {
			return fmt.Errorf("%w: command %q", ErrUntranslatable, h[4:headerSize-8])
		}
		if n := h.PayloadLen(); n > maxUnknownPayload {
			return fmt.Errorf("%w: %d-byte payload", ErrUntranslatable, n)
		}
		end := headerSize + int(h.PayloadLen())
		if len(c.rawOut) < end {
			return nil
		}
		if _, err := c.v2.WriteMessage(h.Command(), c.rawOut[headerSize:end]); err != nil {
			return err
		}
		c.rawOut = c.rawOut[:copy(c.rawOut, c.rawOut[end:])]
	}
	return nil
}

// nextV2 reads the next message over v2, answering pings unless
// KeepPings; a message whose type does not decode is dropped, as Core
// drops it. A transient message's payload is valid until the next read.
// The connection-wide cap (v2Config) was checked before the packet was
// read; per-command caps are the caller's, after.
func (c *Conn) nextV2(transient bool) (v2conn.Message, error) {
	for {
		var m v2conn.Message
		var err error
		if transient {
			m, err = c.v2.ReadTransient()
		} else {
			m, err = c.v2.ReadMessage()
		}
		if err != nil {
			return m, fmt.Errorf("read v2 message: %w", err)
		}
		if m.Undecodable {
			continue
		}
		if m.Command == wire.CmdPing && !c.keepPings {
			if err := c.answerPing(m.Payload); err != nil {
				return m, err
			}
			continue
		}
		return m, nil
	}
}

// putHeader writes a v1 header for a message read over v2 into c.hdr:
// the checksum only when sum (v2 carries none).
func (c *Conn) putHeader(cmd string, payload []byte, sum bool) Header {
	var checksum [4]byte
	if sum {
		checksum = wireframe.PayloadChecksum(payload)
	}
	wireframe.PutHeader(c.hdr[:], c.net, cmd, len(payload), checksum)
	return Header(c.hdr[:])
}

// readRawV2 is ReadRaw over v2: the payload in the connection's reused
// buffer, the header made up with a zero checksum.
func (c *Conn) readRawV2(limit uint32) (RawFrame, error) {
	m, err := c.nextV2(true)
	if err != nil {
		return RawFrame{}, err
	}
	if uint32(len(m.Payload)) > limit {
		return RawFrame{}, fmt.Errorf("%w: %s of %d bytes exceeds %d", ErrProtocol, m.Command, len(m.Payload), limit)
	}
	return RawFrame{Header: c.putHeader(m.Command, m.Payload, false), Payload: m.Payload}, nil
}

// readFrameV2 is ReadFrame over v2: every message is read (a v2 packet
// cannot be skipped unread), the unwanted returned without payload.
func (c *Conn) readFrameV2(keep []string) (Frame, error) {
	m, err := c.nextV2(false)
	if err != nil {
		return Frame{}, err
	}
	cmd := m.Command
	want := len(keep) == 0 || cmd == wire.CmdPing || cmd == wire.CmdNotFound || cmd == wire.CmdReject
	for _, k := range keep {
		want = want || cmd == k
	}
	if !want {
		return Frame{Command: cmd}, nil
	}
	if n := len(m.Payload); uint32(n) > MaxPayload(cmd) {
		return Frame{}, fmt.Errorf("%w: %s of %d bytes exceeds %d", ErrProtocol, cmd, n, MaxPayload(cmd))
	}
	return Frame{Command: cmd, Payload: m.Payload}, nil
}

// discardAllV2 is DiscardAll over v2: bytes are dropped undecrypted.
func (c *Conn) discardAllV2() error {
	_, err := io.Copy(io.Discard, c.counted)
	if err == nil {
		err = io.EOF
	}
	return err
}
