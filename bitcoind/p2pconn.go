package bitcoind

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Limits of the P2P block path. A frame's declared length is checked
// against its command's cap before anything is allocated for it; frames
// cfindexd does not use are skipped without being buffered.
const (
	// p2pProtocolVersion is the version cfindexd announces (wtxidrelay era).
	p2pProtocolVersion = wire.ProtocolVersion
	// p2pMaxSmallPayload caps the payload of the small messages read
	// into memory (version, ping, notfound, reject).
	p2pMaxSmallPayload = 1 << 20
	// p2pDialTimeout bounds connecting; p2pHandshakeTimeout the
	// version/verack exchange; p2pReadTimeout the wait for each message
	// of a run once the getdata is sent.
	p2pDialTimeout      = 5 * time.Second
	p2pHandshakeTimeout = 10 * time.Second
	p2pReadTimeout      = 30 * time.Second
)

// errP2PNotFound is returned when the node answers a getdata with notfound:
// the caller fetches that run over RPC instead.
var errP2PNotFound = errors.New("node answered notfound")

// p2pConn is one outbound connection to the node's P2P listener, used by
// one fetch at a time. It never runs goroutines of its own: pings are
// answered while a run's blocks are read.
type p2pConn struct {
	conn net.Conn
	r    *bufio.Reader
	net  wire.BitcoinNet
	hdr  [wire.MessageHeaderSize]byte
	buf  []byte // reused payload buffer for small messages
}

// dialP2P connects to addr and completes the version/verack handshake,
// announcing NODE_WITNESS and no transaction relay.
func dialP2P(ctx context.Context, addr string, btcnet wire.BitcoinNet) (*p2pConn, error) {
	d := net.Dialer{Timeout: p2pDialTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	c := &p2pConn{conn: conn, r: bufio.NewReaderSize(conn, 64<<10), net: btcnet}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	if err := c.handshake(); err != nil {
		conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("handshake with %s: %w", addr, err)
	}
	return c, nil
}

func (c *p2pConn) handshake() error {
	_ = c.conn.SetDeadline(time.Now().Add(p2pHandshakeTimeout))
	me := wire.NewNetAddressIPPort(net.IPv4zero, 0, wire.SFNodeWitness)
	you := wire.NewNetAddressIPPort(net.IPv4zero, 0, 0)
	if tcp, ok := c.conn.RemoteAddr().(*net.TCPAddr); ok {
		you = wire.NewNetAddressIPPort(tcp.IP, uint16(tcp.Port), 0)
	}
	ver := wire.NewMsgVersion(me, you, rand.Uint64(), 0)
	ver.ProtocolVersion = int32(p2pProtocolVersion)
	ver.Services = wire.SFNodeWitness
	ver.DisableRelayTx = true
	ver.AddUserAgent("cfindexd", "0.1")
	if err := c.write(ver); err != nil {
		return err
	}
	gotVersion, gotVerack := false, false
	for !gotVersion || !gotVerack {
		cmd, payload, err := c.readFrame(wire.CmdVersion)
		if err != nil {
			return err
		}
		switch cmd {
		case wire.CmdVersion:
			var v wire.MsgVersion
			if err := v.BtcDecode(bytes.NewBuffer(payload), p2pProtocolVersion, wire.BaseEncoding); err != nil {
				return fmt.Errorf("%w: version: %v", ErrMalformed, err)
			}
			if !v.HasService(wire.SFNodeWitness) {
				return fmt.Errorf("node does not serve witness blocks (services %s)", v.Services)
			}
			gotVersion = true
			if err := c.write(wire.NewMsgVerAck()); err != nil {
				return err
			}
		case wire.CmdVerAck:
			gotVerack = true
		case wire.CmdReject:
			return errors.New("node rejected our version")
		}
	}
	return c.conn.SetDeadline(time.Time{})
}

func (c *p2pConn) write(msg wire.Message) error {
	_, err := wire.WriteMessageWithEncodingN(c.conn, msg, p2pProtocolVersion, c.net, wire.WitnessEncoding)
	return err
}

// readFrame reads one message. Frames whose command is in keep, or a
// ping, notfound or reject, are returned with their payload (valid until
// the next call unless it is a block); others are skipped unread and
// returned with a nil payload. The declared length is checked against
// the command's cap before allocating, and the checksum is verified for
// every kept frame except blocks, whose merkle root the caller checks.
func (c *p2pConn) readFrame(keep ...string) (string, []byte, error) {
	if _, err := io.ReadFull(c.r, c.hdr[:]); err != nil {
		return "", nil, err
	}
	if got := wire.BitcoinNet(binary.LittleEndian.Uint32(c.hdr[0:4])); got != c.net {
		return "", nil, fmt.Errorf("%w: message for network %s, want %s", ErrMalformed, got, c.net)
	}
	cmd := string(bytes.TrimRight(c.hdr[4:16], "\x00"))
	n := binary.LittleEndian.Uint32(c.hdr[16:20])
	var sum [4]byte
	copy(sum[:], c.hdr[20:24])

	want := cmd == wire.CmdPing || cmd == wire.CmdNotFound || cmd == wire.CmdReject
	for _, k := range keep {
		want = want || cmd == k
	}
	limit := uint32(p2pMaxSmallPayload)
	if cmd == wire.CmdBlock {
		limit = wire.MaxBlockPayload
	}
	if !want {
		limit = wire.MaxMessagePayload
	}
	if n > limit {
		return "", nil, fmt.Errorf("%w: %s message of %d bytes exceeds %d", ErrMalformed, cmd, n, limit)
	}
	if !want {
		if _, err := c.r.Discard(int(n)); err != nil {
			return "", nil, err
		}
		return cmd, nil, nil
	}
	var payload []byte
	if cmd == wire.CmdBlock {
		payload = make([]byte, n) // handed to the caller
	} else {
		if cap(c.buf) < int(n) {
			c.buf = make([]byte, n)
		}
		payload = c.buf[:n]
	}
	if _, err := io.ReadFull(c.r, payload); err != nil {
		return "", nil, err
	}
	if cmd == wire.CmdBlock {
		// A block is checked more strongly and more cheaply by its
		// header hash and merkle root (fetchBlocks), from txids that
		// are computed anyway, than by hashing the whole payload again.
		return cmd, payload, nil
	}
	first := sha256.Sum256(payload)
	second := sha256.Sum256(first[:])
	if !bytes.Equal(second[:4], sum[:]) {
		return "", nil, fmt.Errorf("%w: %s message checksum mismatch", ErrMalformed, cmd)
	}
	return cmd, payload, nil
}

// fetchBlocks sends one getdata of witness blocks for hashes and reads the
// blocks, which the node sends in request order. Pings are answered. Each
// block must hash to the hash asked for at its position. A notfound gives
// errP2PNotFound. The connection must not be reused after an error. With
// maxBytes > 0 it stops once the blocks read hold that many bytes and
// returns them; the connection must not be reused then either (the other
// blocks are on their way).
func (c *p2pConn) fetchBlocks(ctx context.Context, hashes []chainhash.Hash, maxBytes int) ([]*scannedBlock, error) {
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(time.Now()) })
	defer stop()
	gd := wire.NewMsgGetDataSizeHint(uint(len(hashes)))
	for i := range hashes {
		if err := gd.AddInvVect(wire.NewInvVect(wire.InvTypeWitnessBlock, &hashes[i])); err != nil {
			return nil, err
		}
	}
	_ = c.conn.SetWriteDeadline(time.Now().Add(p2pReadTimeout))
	if err := c.write(gd); err != nil {
		return nil, c.ctxErr(ctx, fmt.Errorf("send getdata: %w", err))
	}
	out := make([]*scannedBlock, 0, len(hashes))
	held := 0
	for len(out) < len(hashes) && (maxBytes <= 0 || held < maxBytes) {
		_ = c.conn.SetReadDeadline(time.Now().Add(p2pReadTimeout))
		cmd, payload, err := c.readFrame(wire.CmdBlock)
		if err != nil {
			return nil, c.ctxErr(ctx, fmt.Errorf("read block %s: %w", hashes[len(out)], err))
		}
		switch cmd {
		case wire.CmdBlock:
			b, err := scanBlock(payload, hashes[len(out)])
			if err != nil {
				return nil, err
			}
			out = append(out, b)
			held += len(payload)
		case wire.CmdPing:
			var p wire.MsgPing
			if err := p.BtcDecode(bytes.NewBuffer(payload), p2pProtocolVersion, wire.BaseEncoding); err != nil {
				return nil, fmt.Errorf("%w: ping: %v", ErrMalformed, err)
			}
			_ = c.conn.SetWriteDeadline(time.Now().Add(p2pReadTimeout))
			if err := c.write(wire.NewMsgPong(p.Nonce)); err != nil {
				return nil, c.ctxErr(ctx, fmt.Errorf("send pong: %w", err))
			}
		case wire.CmdNotFound:
			return nil, fmt.Errorf("block %s: %w", hashes[len(out)], errP2PNotFound)
		}
	}
	return out, nil
}

// ctxErr prefers the context's error: a cancelled fetch shows up as a
// deadline error on the socket.
func (c *p2pConn) ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func (c *p2pConn) close() { _ = c.conn.Close() }
