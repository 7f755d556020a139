package nodep2p

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
	"syscall"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
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
	p2pHandshakeTimeout = 5 * time.Second
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

// dialP2P connects to addr, completes the version/verack handshake,
// announcing NODE_WITNESS and no transaction relay, and, when identify is
// set, checks that the peer is on the RPC node's chain (identifyPeer).
// Errors that say the address is not the node cfindexd follows wrap
// ErrNotTheNode.
func dialP2P(ctx context.Context, addr string, btcnet wire.BitcoinNet, identify IdentifyBlock) (*p2pConn, error) {
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
		if errors.Is(err, errClosedWithoutVersion) {
			// Nodes drop a peer whose messages carry another network's
			// magic without a word: find the network that gets an answer.
			if name, ok := probeNetwork(ctx, addr, btcnet); ok {
				err = fmt.Errorf("%w: it is a node on %s, but cfindexd follows %s", ErrNotTheNode, name, netNameOr(btcnet))
			}
		}
		return nil, fmt.Errorf("nodep2p %s: %w", addr, err)
	}
	if identify != nil {
		if err := c.identifyPeer(ctx, identify); err != nil {
			conn.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("nodep2p %s: %w", addr, err)
		}
	}
	return c, nil
}

// ErrNotTheNode means a nodep2p address answered, but not as the P2P
// port of the node cfindexd follows: not a Bitcoin node, a node on another
// network, or a node without the RPC node's blocks. Retrying the address
// soon does not help.
var ErrNotTheNode = errors.New("not the P2P port of the node cfindexd follows")

// IdentifyBlock returns a block of the RPC node's chain that an unrelated
// node on the same network would not have (block 1: the genesis block is
// shared by every node of a network), or ok false when the chain has no
// such block yet.
type IdentifyBlock func(ctx context.Context) (hash chainhash.Hash, ok bool, err error)

// identifyPeer asks the peer for the RPC node's identifying block: the
// node behind its own P2P port serves it; a node on the same network but
// another chain (another regtest, say) answers notfound, or, like Bitcoin
// Core, nothing at all.
func (c *p2pConn) identifyPeer(ctx context.Context, identify IdentifyBlock) error {
	hash, ok, err := identify(ctx)
	if err != nil {
		return fmt.Errorf("identify the node's chain over RPC: %w", err)
	}
	if !ok {
		return nil
	}
	ictx, cancel := context.WithTimeout(ctx, p2pHandshakeTimeout)
	defer cancel()
	_, err = c.fetchBlocks(ictx, []chainhash.Hash{hash}, 0)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, errP2PNotFound), ictx.Err() != nil:
		return fmt.Errorf("%w: it does not serve block 1 (%s) of the RPC node's chain: a node on the same network but another chain", ErrNotTheNode, hash)
	}
	return err
}

// versionMessage is our version: NODE_WITNESS, no transaction relay.
func (c *p2pConn) versionMessage() *wire.MsgVersion {
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
	return ver
}

func (c *p2pConn) handshake() error {
	_ = c.conn.SetDeadline(time.Now().Add(p2pHandshakeTimeout))
	if err := c.write(c.versionMessage()); err != nil {
		// The peer may have spoken and hung up before our version went
		// out: what it said explains more than the broken pipe.
		if _, _, rerr := c.readFrame(wire.CmdVersion); rerr != nil {
			if said := c.handshakeError(rerr, true); errors.Is(said, ErrNotTheNode) && !errors.Is(said, errClosedWithoutVersion) {
				return said
			}
		}
		return c.handshakeError(err, true)
	}
	gotVersion, gotVerack := false, false
	for first := true; !gotVersion || !gotVerack; first = false {
		cmd, payload, err := c.readFrame(wire.CmdVersion)
		if err != nil {
			return c.handshakeError(err, first)
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

// handshakeError explains a failed handshake read: a first frame for
// another network names that network; bytes that are no Bitcoin frame at
// all, or silence, say the address is not a Bitcoin P2P port.
func (c *p2pConn) handshakeError(err error, first bool) error {
	var wm *wrongMagicError
	if errors.As(err, &wm) {
		if name, ok := networkName(wm.got); ok {
			return fmt.Errorf("%w: it is a node on %s, but cfindexd follows %s", ErrNotTheNode, name, netNameOr(c.net))
		}
		if bytes.HasPrefix(wm.raw[:], []byte("HTTP")) {
			return fmt.Errorf("%w: it answered like an HTTP server (is this the RPC port?)", ErrNotTheNode)
		}
		return fmt.Errorf("%w: it answered %q, which is no Bitcoin P2P message", ErrNotTheNode, wm.raw[:])
	}
	var nerr net.Error
	if first && errors.As(err, &nerr) && nerr.Timeout() {
		return fmt.Errorf("%w: it sent no version message within %s", ErrNotTheNode, p2pHandshakeTimeout)
	}
	if first && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
		return fmt.Errorf("%w: %w", ErrNotTheNode, errClosedWithoutVersion)
	}
	return err
}

// errClosedWithoutVersion: the peer hung up on our version message, which
// is how Bitcoin Core and btcd answer a message for another network.
var errClosedWithoutVersion = errors.New("it closed the connection without a version message")

// knownMagics are the networks probeNetwork tries, in this order.
var knownMagics = [...]wire.BitcoinNet{wire.MainNet, wire.TestNet3, wire.TestNet4, wire.SigNet, wire.TestNet, wire.SimNet}

// probeNetwork finds which network the node at addr is on by sending a
// version message with each other network's magic until one is answered
// with a frame of the same magic. Each try is one short connection.
func probeNetwork(ctx context.Context, addr string, not wire.BitcoinNet) (string, bool) {
	for _, magic := range knownMagics {
		if magic == not || ctx.Err() != nil {
			continue
		}
		if answersMagic(ctx, addr, magic) {
			return networkName(magic)
		}
	}
	return "", false
}

// answersMagic sends a version message for magic to addr and reports
// whether the first frame back carries the same magic.
func answersMagic(ctx context.Context, addr string, magic wire.BitcoinNet) bool {
	d := net.Dialer{Timeout: p2pDialTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	c := &p2pConn{conn: conn, r: bufio.NewReader(conn), net: magic}
	_ = c.write(c.versionMessage()) // a peer that spoke first may be gone
	_, _, err = c.readFrame(wire.CmdVersion)
	return err == nil
}

// wrongMagicError is a frame whose network magic is not ours.
type wrongMagicError struct {
	got, want wire.BitcoinNet
	raw       [4]byte
}

func (e *wrongMagicError) Error() string {
	return fmt.Sprintf("%s: message for network %s, want %s", ErrMalformed, netNameOr(e.got), netNameOr(e.want))
}

// Is makes a wrong magic an ErrMalformed, as any frame that is not ours.
func (e *wrongMagicError) Is(target error) bool { return target == ErrMalformed }

// networkName names the network of a P2P magic with cfindexd's chain
// names; ok is false for a magic no known network uses.
func networkName(magic wire.BitcoinNet) (string, bool) {
	switch magic {
	case wire.MainNet:
		return "main", true
	case wire.TestNet3:
		return "test (testnet3)", true
	case wire.TestNet4:
		return "testnet4", true
	case wire.SigNet:
		return "signet", true
	case wire.TestNet:
		return "regtest", true
	case wire.SimNet:
		return "simnet", true
	}
	return "", false
}

func netNameOr(magic wire.BitcoinNet) string {
	if name, ok := networkName(magic); ok {
		return name
	}
	return fmt.Sprintf("with magic %#08x", uint32(magic))
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
		wm := &wrongMagicError{got: got, want: c.net}
		copy(wm.raw[:], c.hdr[0:4])
		return "", nil, wm
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
func (c *p2pConn) fetchBlocks(ctx context.Context, hashes []chainhash.Hash, maxBytes int) ([]*wirescan.ScannedBlock, error) {
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
	out := make([]*wirescan.ScannedBlock, 0, len(hashes))
	held := 0
	for len(out) < len(hashes) && (maxBytes <= 0 || held < maxBytes) {
		_ = c.conn.SetReadDeadline(time.Now().Add(p2pReadTimeout))
		cmd, payload, err := c.readFrame(wire.CmdBlock)
		if err != nil {
			return nil, c.ctxErr(ctx, fmt.Errorf("read block %s: %w", hashes[len(out)], err))
		}
		switch cmd {
		case wire.CmdBlock:
			b, err := wirescan.ScanBlock(payload, hashes[len(out)])
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
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
