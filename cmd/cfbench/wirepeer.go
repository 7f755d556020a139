package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// maxFramePayload bounds a frame the load peer accepts, checked before it
// reads the payload (wire.MaxMessagePayload).
const maxFramePayload = wire.MaxMessagePayload

// wirePeer is a minimal BIP-157 light client on one TCP connection: it
// speaks the v1 transport, answers pings, and reads responses as raw
// frames in place in its read buffer (no copy, no decoding, no
// allocation), so that the load generator spends as little CPU per filter
// as possible: it shares the machine with the server it measures. The
// caller checks each frame's bytes against the expected answers. It is
// not safe for concurrent use.
type wirePeer struct {
	conn   net.Conn
	r      *bufio.Reader
	w      *bufio.Writer
	net    wire.BitcoinNet
	pver   uint32
	header [wire.MessageHeaderSize]byte
	buf    []byte // payload of the last frame too large to read in place, reused
	// unread is the size of the last frame returned in place, discarded
	// from r at the next read.
	unread int
}

// peerReadBuffer sizes a load peer's read buffer: a full cfheaders answer
// (2,000 hashes, 64,092 bytes) and most cfilter frames are read in place.
const peerReadBuffer = 64 << 10

// frame is one message read off the wire; command and payload are valid
// until the next read.
type frame struct {
	command []byte // 12 bytes, NUL-padded, as on the wire
	header  []byte // the 24-byte header
	payload []byte
	size    int // header plus payload bytes
}

// is reports whether f carries command cmd.
func (f frame) is(cmd string) bool {
	n := bytes.IndexByte(f.command, 0)
	if n < 0 {
		n = len(f.command)
	}
	return string(f.command[:n]) == cmd // no allocation
}

// dialPeer connects to addr and completes the version/verack handshake as
// a light client (no services, no tx relay) within timeout.
func dialPeer(addr string, params *chaincfg.Params, nonce uint64, timeout time.Duration) (*wirePeer, error) {
	return dialPeerFrom(addr, "", params, nonce, timeout)
}

// dialPeerFrom is dialPeer from the local address localIP (any when
// empty): hostile's clients stand in for many hosts with 127.x.y.z source
// addresses.
func dialPeerFrom(addr, localIP string, params *chaincfg.Params, nonce uint64, timeout time.Duration) (*wirePeer, error) {
	d := net.Dialer{Timeout: timeout}
	if localIP != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(localIP)}
	}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	p := &wirePeer{
		conn: conn,
		r:    bufio.NewReaderSize(conn, peerReadBuffer),
		w:    bufio.NewWriterSize(conn, 4<<10),
		net:  params.Net,
		pver: wire.ProtocolVersion,
	}
	if err := p.handshake(nonce, timeout); err != nil {
		conn.Close()
		return nil, fmt.Errorf("handshake with %s: %w", addr, err)
	}
	return p, nil
}

// handshake sends version, answers the server's version with verack and
// waits for the server's verack.
func (p *wirePeer) handshake(nonce uint64, timeout time.Duration) error {
	if err := p.conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	me := wire.NewNetAddressIPPort(net.IPv4(127, 0, 0, 1), 0, 0)
	you := wire.NewNetAddressIPPort(net.IPv4(127, 0, 0, 1), 0, wire.SFNodeNetwork)
	v := wire.NewMsgVersion(me, you, nonce, 0)
	v.UserAgent = "/cfbench:0.1/"
	v.DisableRelayTx = true
	if err := p.send(v); err != nil {
		return err
	}
	gotVersion, gotVerack := false, false
	for !gotVersion || !gotVerack {
		f, err := p.read()
		if err != nil {
			return err
		}
		switch {
		case f.is(wire.CmdVersion):
			var sv wire.MsgVersion
			if err := sv.BtcDecode(bytes.NewBuffer(f.payload), wire.ProtocolVersion, wire.BaseEncoding); err != nil {
				return fmt.Errorf("decode version: %w", err)
			}
			if sv.Services&wire.SFNodeCF == 0 {
				return fmt.Errorf("server does not offer compact filters (services %v)", sv.Services)
			}
			p.pver = min(p.pver, uint32(sv.ProtocolVersion))
			gotVersion = true
			if err := p.send(wire.NewMsgVerAck()); err != nil {
				return err
			}
		case f.is(wire.CmdVerAck):
			gotVerack = true
		}
	}
	return p.conn.SetDeadline(time.Time{})
}

// send writes msg and flushes.
func (p *wirePeer) send(msg wire.Message) error {
	if _, err := wire.WriteMessageN(p.w, msg, p.pver, p.net); err != nil {
		return fmt.Errorf("send %s: %w", msg.Command(), err)
	}
	if err := p.w.Flush(); err != nil {
		return fmt.Errorf("send %s: %w", msg.Command(), err)
	}
	return nil
}

// read returns the next frame, answering pings on the way. The frame is
// read in place in the peer's buffer when it fits (it is valid until the
// next read), else into a buffer of the peer's own. The checksum is not
// verified here: the caller compares the whole frame, checksum included,
// with the one it expects.
func (p *wirePeer) read() (frame, error) {
	for {
		if p.unread > 0 {
			if _, err := p.r.Discard(p.unread); err != nil {
				return frame{}, fmt.Errorf("read frame: %w", err)
			}
			p.unread = 0
		}
		hdr, err := p.r.Peek(wire.MessageHeaderSize)
		if err != nil {
			return frame{}, fmt.Errorf("read frame header: %w", err)
		}
		if magic := wire.BitcoinNet(binary.LittleEndian.Uint32(hdr[0:4])); magic != p.net {
			return frame{}, fmt.Errorf("frame with network magic %v, want %v", magic, p.net)
		}
		n := binary.LittleEndian.Uint32(hdr[16:20])
		if n > maxFramePayload {
			return frame{}, fmt.Errorf("%q frame of %d bytes exceeds %d", bytes.TrimRight(hdr[4:16], "\x00"), n, maxFramePayload)
		}
		size := wire.MessageHeaderSize + int(n)
		var f frame
		if size <= p.r.Size() {
			whole, err := p.r.Peek(size)
			if err != nil {
				return frame{}, fmt.Errorf("read %q payload: %w", bytes.TrimRight(hdr[4:16], "\x00"), err)
			}
			p.unread = size
			f = frame{header: whole[:wire.MessageHeaderSize], payload: whole[wire.MessageHeaderSize:], size: size}
		} else {
			copy(p.header[:], hdr)
			if _, err := p.r.Discard(wire.MessageHeaderSize); err != nil {
				return frame{}, err
			}
			if cap(p.buf) < int(n) {
				p.buf = make([]byte, n)
			}
			p.buf = p.buf[:n]
			if _, err := io.ReadFull(p.r, p.buf); err != nil {
				return frame{}, fmt.Errorf("read %q payload: %w", bytes.TrimRight(p.header[4:16], "\x00"), err)
			}
			f = frame{header: p.header[:], payload: p.buf, size: size}
		}
		f.command = f.header[4 : 4+wire.CommandSize]
		if f.is(wire.CmdPing) {
			if len(f.payload) < 8 {
				return frame{}, fmt.Errorf("ping of %d bytes", len(f.payload))
			}
			if err := p.send(wire.NewMsgPong(binary.LittleEndian.Uint64(f.payload))); err != nil {
				return frame{}, err
			}
			continue
		}
		return f, nil
	}
}

// close closes the connection.
func (p *wirePeer) close() error { return p.conn.Close() }
