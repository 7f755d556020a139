package p2pclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/p2p/v2conn"
	"github.com/cfindexd/cfindexd/wireframe"
)

// ConnOptions configure DialConn.
type ConnOptions struct {
	// LocalIP is the source address to dial from; any when empty (attack
	// tools stand in for many hosts with 127.x.y.z addresses).
	LocalIP string
	// Timeout bounds the dial; DefaultTimeout when zero.
	Timeout time.Duration
	// ReadBuffer and WriteBuffer size the connection's buffers; 64 KiB and
	// 16 KiB when zero. A frame that fits the read buffer whole is read in
	// place by ReadRaw.
	ReadBuffer, WriteBuffer int
	// NoBlockChecksum skips the checksum of block frames in ReadFrame: for
	// callers that check each block's merkle root, which covers more and
	// costs less than hashing the payload again.
	NoBlockChecksum bool
	// Transport is v1 (the zero value), v2 (BIP-324) or auto (v2, else v1
	// when the peer hangs up before its v2 key); DialConn runs the v2
	// handshake, within Timeout.
	Transport Transport
}

// Conn is one framed P2P connection: it sends wire messages and raw bytes
// and reads frames, each header's network magic, command and declared
// length checked before anything is allocated for the payload. Over v2
// (ConnOptions.Transport) the same methods carry messages in BIP-324
// packets, and frames are made up from each message's command and payload
// (transport.go). Every read
// answers pings on the way. It is the base of Peer, of the node's P2P
// link, and of the load and attack tools, which read frames their own way
// (ReadRaw in place without a checksum, Skip without reading the payload).
// It is not safe for concurrent use, except Close and the deadlines.
type Conn struct {
	nc   net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
	net  wire.BitcoinNet
	pver uint32
	// noBlockSum: see ConnOptions.NoBlockChecksum.
	noBlockSum bool
	// keepPings: see KeepPings.
	keepPings bool
	// hdr is the current frame's header; pending the bytes of the
	// current frame still in r (the header too while it is only peeked).
	hdr     [headerSize]byte
	pending int
	buf     []byte // reused payload buffer of ReadRaw's large frames

	// Over v2: the connection, its socket counted, Send's encoding buffer
	// and the raw bytes of a v1 frame not yet whole (WriteRaw).
	v2      *v2conn.Conn
	counted *countingConn
	enc     bytes.Buffer
	rawOut  []byte

	bytesRead, bytesWritten int64
}

// DialConn connects to addr for the network of magic over opts.Transport
// (running the v2 handshake, if any). It does not send a version: see
// Handshake.
func DialConn(ctx context.Context, addr string, magic wire.BitcoinNet, opts ConnOptions) (*Conn, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	d := net.Dialer{Timeout: opts.Timeout}
	if opts.LocalIP != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(opts.LocalIP)}
	}
	return dialTransport(ctx, &d, addr, magic, opts)
}

// NewConn frames nc for the network of magic over v1 (opts' buffer sizes
// and NoBlockChecksum apply; Transport does not).
func NewConn(nc net.Conn, magic wire.BitcoinNet, opts ConnOptions) *Conn {
	if opts.ReadBuffer <= 0 {
		opts.ReadBuffer = 64 << 10
	}
	if opts.WriteBuffer <= 0 {
		opts.WriteBuffer = 16 << 10
	}
	return &Conn{
		nc:         nc,
		r:          bufio.NewReaderSize(nc, opts.ReadBuffer),
		w:          bufio.NewWriterSize(nc, opts.WriteBuffer),
		net:        magic,
		pver:       wire.ProtocolVersion,
		noBlockSum: opts.NoBlockChecksum,
	}
}

// NetConn is the underlying connection.
func (c *Conn) NetConn() net.Conn { return c.nc }

// ProtocolVersion is the version messages are encoded with: ours, or the
// peer's when lower once the handshake has seen its version.
func (c *Conn) ProtocolVersion() uint32 { return c.pver }

// BytesRead and BytesWritten count every byte of every frame, headers
// included (raw writes too), since the connection was made; over v2,
// every byte that crossed the socket (handshake, garbage, decoys and
// packets).
func (c *Conn) BytesRead() int64 { return c.bytesRead }

// BytesWritten: see BytesRead.
func (c *Conn) BytesWritten() int64 { return c.bytesWritten }

// SetDeadline, SetReadDeadline and SetWriteDeadline set the underlying
// connection's deadlines; zero clears them.
func (c *Conn) SetDeadline(t time.Time) error { return c.nc.SetDeadline(t) }

// SetReadDeadline: see SetDeadline.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.nc.SetReadDeadline(t) }

// SetWriteDeadline: see SetDeadline.
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.nc.SetWriteDeadline(t) }

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// Send writes msg as one frame (witness encoding, which equals the base
// encoding for every message but tx and block) and flushes.
func (c *Conn) Send(msg wire.Message) error {
	if c.v2 != nil {
		return c.sendV2(msg)
	}
	n, err := wire.WriteMessageWithEncodingN(c.w, msg, c.pver, c.net, wire.WitnessEncoding)
	c.bytesWritten += int64(n)
	if err == nil {
		err = c.w.Flush()
	}
	if err != nil {
		return fmt.Errorf("send %s: %w", msg.Command(), err)
	}
	return nil
}

// WriteRaw writes b as it is, in one write on the connection: a frame an
// attack tool built by hand, or part of one. Over v2, b must be v1 frames
// of our network (ErrUntranslatable): each goes out as a message once
// whole, its checksum dropped.
func (c *Conn) WriteRaw(b []byte) error {
	if c.v2 != nil {
		return c.writeRawV2(b)
	}
	if err := c.w.Flush(); err != nil {
		return err
	}
	n, err := c.nc.Write(b)
	c.bytesWritten += int64(n)
	return err
}

// GetData sends one getdata of hashes, each as an inventory of typ.
func (c *Conn) GetData(typ wire.InvType, hashes []chainhash.Hash) error {
	if len(hashes) > wire.MaxInvPerMsg {
		return fmt.Errorf("p2pclient: getdata of %d items (at most %d)", len(hashes), wire.MaxInvPerMsg)
	}
	gd := wire.NewMsgGetDataSizeHint(uint(len(hashes)))
	for i := range hashes {
		_ = gd.AddInvVect(wire.NewInvVect(typ, &hashes[i]))
	}
	return c.Send(gd)
}

// Header is a frame's 24-byte header as on the wire.
type Header []byte

// Is reports whether the frame carries command cmd (without allocating).
func (h Header) Is(cmd string) bool { return string(h.command()) == cmd }

// Command is the frame's command.
func (h Header) Command() string { return string(h.command()) }

func (h Header) command() []byte {
	c := h[4 : 4+wire.CommandSize]
	if n := bytes.IndexByte(c, 0); n >= 0 {
		return c[:n]
	}
	return c
}

// PayloadLen is the payload's declared length.
func (h Header) PayloadLen() uint32 { return binary.LittleEndian.Uint32(h[16:20]) }

// RawFrame is one frame as on the wire, valid until the next read.
type RawFrame struct {
	Header  Header
	Payload []byte
}

// Size is the frame's size on the wire.
func (f RawFrame) Size() int { return len(f.Header) + len(f.Payload) }

// readHeader finishes the previous frame and peeks at the next frame's
// header, checking its magic and command; the header stays in r.
func (c *Conn) readHeader() (Header, error) {
	if c.pending > 0 {
		if _, err := c.r.Discard(c.pending); err != nil {
			return nil, fmt.Errorf("read frame: %w", err)
		}
		c.pending = 0
	}
	hdr, err := c.r.Peek(headerSize)
	if err != nil {
		return nil, fmt.Errorf("read frame header: %w", err)
	}
	c.pending = headerSize + int(wireframe.PayloadLength((*[wireframe.HeaderSize]byte)(hdr)))
	c.bytesRead += int64(c.pending)
	if magic := wire.BitcoinNet(binary.LittleEndian.Uint32(hdr[0:4])); magic != c.net {
		e := &WrongMagicError{Got: magic, Want: c.net}
		copy(e.Raw[:], hdr[0:4])
		return nil, e
	}
	if cmd := hdr[4 : 4+wire.CommandSize]; !commandValid(cmd) {
		return nil, fmt.Errorf("%w: malformed command %q", ErrProtocol, cmd)
	}
	return Header(hdr), nil
}

// commandValid reports whether cmd, a header's 12 command bytes, is
// printable ASCII padded with NULs.
func commandValid(cmd []byte) bool {
	end := bytes.IndexByte(cmd, 0)
	if end < 0 {
		end = len(cmd)
	}
	for i, b := range cmd {
		if i < end && (b < 0x20 || b > 0x7e) || i >= end && b != 0 {
			return false
		}
	}
	return true
}

// checkLen refuses a payload longer than limit before it is read.
func checkLen(h Header, limit uint32) error {
	if n := h.PayloadLen(); n > limit {
		return fmt.Errorf("%w: %s of %d bytes exceeds %d", ErrProtocol, h.command(), n, limit)
	}
	return nil
}

// answerPing answers a ping frame's nonce.
func (c *Conn) answerPing(payload []byte) error {
	if len(payload) < 8 {
		return fmt.Errorf("%w: ping of %d bytes", ErrProtocol, len(payload))
	}
	return c.Send(wire.NewMsgPong(binary.LittleEndian.Uint64(payload)))
}

// ReadRaw returns the next frame as on the wire, answering pings on the
// way; a frame whose payload is over limit is refused before it is read.
// The frame is read in place in the read buffer when it fits (no copy, no
// allocation), else into a buffer of the connection's own; either way it
// is valid until the next read. The checksum is not verified: for callers
// that compare the whole frame with the one they expect, or only count it.
// Over v2 the payload is read into a reused buffer and the header made up
// with a zero checksum (v2 carries none); the limit applies once the
// packet, within the connection's cap, has been read.
func (c *Conn) ReadRaw(limit uint32) (RawFrame, error) {
	if c.v2 != nil {
		return c.readRawV2(limit)
	}
	for {
		h, err := c.readHeader()
		if err != nil {
			return RawFrame{}, err
		}
		if err := checkLen(h, limit); err != nil {
			return RawFrame{}, err
		}
		var f RawFrame
		if size := c.pending; size <= c.r.Size() {
			whole, err := c.r.Peek(size)
			if err != nil {
				return RawFrame{}, fmt.Errorf("read %s payload: %w", h.command(), err)
			}
			f = RawFrame{Header: Header(whole[:headerSize]), Payload: whole[headerSize:]}
		} else {
			copy(c.hdr[:], h)
			_, _ = c.r.Discard(headerSize) // peeked
			n := size - headerSize
			if cap(c.buf) < n {
				c.buf = make([]byte, n)
			}
			c.buf = c.buf[:n]
			c.pending = 0
			if _, err := io.ReadFull(c.r, c.buf); err != nil {
				return RawFrame{}, fmt.Errorf("read %s payload: %w", Header(c.hdr[:]).command(), err)
			}
			f = RawFrame{Header: Header(c.hdr[:]), Payload: c.buf}
		}
		if f.Header.Is(wire.CmdPing) && !c.keepPings {
			if err := c.answerPing(f.Payload); err != nil {
				return RawFrame{}, err
			}
			continue
		}
		return f, nil
	}
}

// Skip reads the next frame without reading its payload into memory,
// answering pings on the way, and returns its command and payload size:
// for attack tools, which must not spend CPU or memory on the answers.
// Over v2 a packet cannot be skipped unread (its tag covers all of it): it
// is read into the reused buffer and authenticated.
func (c *Conn) Skip() (string, int, error) {
	if c.v2 != nil {
		m, err := c.nextV2(true)
		return m.Command, len(m.Payload), err
	}
	for {
		h, err := c.readHeader()
		if err != nil {
			return "", 0, err
		}
		n := int(h.PayloadLen())
		if h.Is(wire.CmdPing) && n == 8 && !c.keepPings {
			whole, err := c.r.Peek(c.pending)
			if err != nil {
				return "", 0, fmt.Errorf("read ping payload: %w", err)
			}
			nonce := binary.LittleEndian.Uint64(whole[headerSize:])
			_, _ = c.r.Discard(c.pending) // peeked
			c.pending = 0
			if err := c.Send(wire.NewMsgPong(nonce)); err != nil {
				return "", 0, err
			}
			continue
		}
		cmd := h.Command()
		if _, err := c.r.Discard(c.pending); err != nil {
			return "", 0, err
		}
		c.pending = 0
		return cmd, n, nil
	}
}

// DiscardAll reads and drops whatever arrives until the connection fails,
// closes or passes its read deadline, and returns that error: for attack
// tools that wait for the peer to hang up. No frame can be read after it.
func (c *Conn) DiscardAll() error {
	if c.v2 != nil {
		return c.discardAllV2()
	}
	c.pending = 0
	for {
		n, err := c.r.Discard(1 << 30)
		c.bytesRead += int64(n)
		if err != nil {
			return err
		}
	}
}

// Frame is one message read off the wire by ReadFrame.
type Frame struct {
	Command string
	// Payload is the frame's own (the caller may keep it); nil for a frame
	// ReadFrame skipped.
	Payload []byte
}

// Size is the frame's size on the wire.
func (f Frame) Size() int { return headerSize + len(f.Payload) }

// ReadFrame returns the next frame, answering pings on the way. Frames
// whose command is in keep (every frame when keep is empty), notfound and
// reject are read, their length checked against their command's cap
// (MaxPayload) and their checksum verified; other frames are skipped
// unread and returned with a nil payload. Over v2 every message is read
// (within the connection's cap, then its command's) and authenticated,
// the unwanted ones returned without payload.
func (c *Conn) ReadFrame(keep ...string) (Frame, error) {
	if c.v2 != nil {
		return c.readFrameV2(keep)
	}
	for {
		h, err := c.readHeader()
		if err != nil {
			return Frame{}, err
		}
		cmd := h.Command()
		want := len(keep) == 0 || cmd == wire.CmdPing || cmd == wire.CmdNotFound || cmd == wire.CmdReject
		for _, k := range keep {
			want = want || cmd == k
		}
		if !want {
			if err := checkLen(h, wire.MaxMessagePayload); err != nil {
				return Frame{}, err
			}
			if _, err := c.r.Discard(c.pending); err != nil {
				return Frame{}, fmt.Errorf("skip %s: %w", cmd, err)
			}
			c.pending = 0
			return Frame{Command: cmd}, nil
		}
		if err := checkLen(h, MaxPayload(cmd)); err != nil {
			return Frame{}, err
		}
		copy(c.hdr[:], h)
		_, _ = c.r.Discard(headerSize) // peeked
		payload := make([]byte, c.pending-headerSize)
		c.pending = 0
		if _, err := io.ReadFull(c.r, payload); err != nil {
			return Frame{}, fmt.Errorf("read %s payload: %w", cmd, err)
		}
		if cmd != wire.CmdBlock || !c.noBlockSum {
			if sum := chainhash.DoubleHashB(payload); !bytes.Equal(sum[:4], c.hdr[20:24]) {
				return Frame{}, fmt.Errorf("%w: %s checksum mismatch", ErrProtocol, cmd)
			}
		}
		if cmd == wire.CmdPing && !c.keepPings {
			if err := c.answerPing(payload); err != nil {
				return Frame{}, err
			}
			continue
		}
		return Frame{Command: cmd, Payload: payload}, nil
	}
}

// MaxPayload is the cap ReadFrame puts on a command's payload.
func MaxPayload(cmd string) uint32 {
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
