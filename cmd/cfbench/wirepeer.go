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
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// maxFramePayload bounds a frame the load peer accepts, checked before it
// reads the payload (wire.MaxMessagePayload).
const maxFramePayload = wire.MaxMessagePayload

// wirePeer is a minimal BIP-157 light client on one TCP connection: it
// speaks the v1 transport, answers pings, and reads responses as raw
// frames so that the load generator spends as little CPU per filter as
// possible (it shares the machine with the server it measures). It is not
// safe for concurrent use.
type wirePeer struct {
	conn   net.Conn
	r      *bufio.Reader
	w      *bufio.Writer
	net    wire.BitcoinNet
	pver   uint32
	header [wire.MessageHeaderSize]byte
	buf    []byte // payload of the last frame, reused
}

// frame is one message read off the wire; payload is valid until the next
// read.
type frame struct {
	command string
	payload []byte
	size    int // header plus payload bytes
}

// dialPeer connects to addr and completes the version/verack handshake as
// a light client (no services, no tx relay) within timeout.
func dialPeer(addr string, params *chaincfg.Params, nonce uint64, timeout time.Duration) (*wirePeer, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	p := &wirePeer{
		conn: conn,
		r:    bufio.NewReaderSize(conn, 64<<10),
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
		switch f.command {
		case wire.CmdVersion:
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
		case wire.CmdVerAck:
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

// read returns the next frame, answering pings on the way. The checksum is
// not verified: this is loopback, and hashing every payload would put the
// load generator's CPU into the measurement.
func (p *wirePeer) read() (frame, error) {
	for {
		if _, err := io.ReadFull(p.r, p.header[:]); err != nil {
			return frame{}, fmt.Errorf("read frame header: %w", err)
		}
		if magic := wire.BitcoinNet(binary.LittleEndian.Uint32(p.header[0:4])); magic != p.net {
			return frame{}, fmt.Errorf("frame with network magic %v, want %v", magic, p.net)
		}
		cmd := string(bytes.TrimRight(p.header[4:4+wire.CommandSize], "\x00"))
		n := binary.LittleEndian.Uint32(p.header[16:20])
		if n > maxFramePayload {
			return frame{}, fmt.Errorf("%s frame of %d bytes exceeds %d", cmd, n, maxFramePayload)
		}
		if cap(p.buf) < int(n) {
			p.buf = make([]byte, n)
		}
		p.buf = p.buf[:n]
		if _, err := io.ReadFull(p.r, p.buf); err != nil {
			return frame{}, fmt.Errorf("read %s payload: %w", cmd, err)
		}
		if cmd == wire.CmdPing {
			var ping wire.MsgPing
			if err := ping.BtcDecode(bytes.NewBuffer(p.buf), p.pver, wire.BaseEncoding); err != nil {
				return frame{}, fmt.Errorf("decode ping: %w", err)
			}
			if err := p.send(wire.NewMsgPong(ping.Nonce)); err != nil {
				return frame{}, err
			}
			continue
		}
		return frame{command: cmd, payload: p.buf, size: wire.MessageHeaderSize + int(n)}, nil
	}
}

// cfilterBlock returns the block hash of a cfilter payload (filter type,
// then the block hash) without decoding the filter.
func cfilterBlock(payload []byte) (chainhash.Hash, error) {
	var h chainhash.Hash
	if len(payload) < 1+chainhash.HashSize {
		return h, fmt.Errorf("cfilter payload of %d bytes", len(payload))
	}
	copy(h[:], payload[1:1+chainhash.HashSize])
	return h, nil
}

// cfheadersStop returns the stop hash and the number of filter hashes of a
// cfheaders payload (filter type, stop hash, previous header, CompactSize
// count, hashes) without decoding the hashes.
func cfheadersStop(payload []byte) (chainhash.Hash, uint64, error) {
	var h chainhash.Hash
	const fixed = 1 + 2*chainhash.HashSize
	if len(payload) < fixed+1 {
		return h, 0, fmt.Errorf("cfheaders payload of %d bytes", len(payload))
	}
	copy(h[:], payload[1:1+chainhash.HashSize])
	count, err := wire.ReadVarInt(bytes.NewReader(payload[fixed:]), 0)
	if err != nil {
		return h, 0, fmt.Errorf("cfheaders count: %w", err)
	}
	return h, count, nil
}

// close closes the connection.
func (p *wirePeer) close() error { return p.conn.Close() }
