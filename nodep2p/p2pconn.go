package nodep2p

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/cfindexd/cfindexd/internal/p2pclient"
	"github.com/cfindexd/cfindexd/internal/wirescan"
	"github.com/cfindexd/cfindexd/netparams"
)

// Limits of the P2P block path. The connection is a p2pclient.Conn: a
// frame's declared length is checked against its command's cap before
// anything is allocated for it; frames cfindexd does not use are skipped
// without being buffered.
const (
	// p2pDialTimeout bounds connecting; p2pHandshakeTimeout the
	// version/verack exchange; p2pReadTimeout the wait for each message
	// of a run once the getdata is sent.
	p2pDialTimeout      = 5 * time.Second
	p2pHandshakeTimeout = 5 * time.Second
	p2pReadTimeout      = 30 * time.Second
)

// userAgent is cfindexd's user agent on the node's P2P port.
const userAgent = wire.DefaultUserAgent + "cfindexd:0.1/"

// ErrNotFound is returned when the node answers a getdata with notfound:
// the caller fetches that run over RPC instead.
var ErrNotFound = errors.New("node answered notfound")

// p2pConn is one outbound connection to the node's P2P listener, used by
// one fetch at a time. It never runs goroutines of its own: pings are
// answered while a run's blocks are read.
type p2pConn struct {
	c   *p2pclient.Conn
	net wire.BitcoinNet
}

// connOptions: blocks are checked by their header hash and merkle root
// (fetchBlocks), from txids that are computed anyway, more strongly and
// more cheaply than by hashing the whole payload again for the checksum.
var connOptions = p2pclient.ConnOptions{Timeout: p2pDialTimeout, NoBlockChecksum: true}

// handshakeOptions: NODE_WITNESS, no transaction relay, and the node must
// serve witness blocks.
var handshakeOptions = p2pclient.HandshakeOptions{
	Services: wire.SFNodeWitness, Require: wire.SFNodeWitness, UserAgent: userAgent, Timeout: p2pHandshakeTimeout,
}

// dialP2P connects to addr, completes the version/verack handshake,
// announcing NODE_WITNESS and no transaction relay, and, when identify is
// set, checks that the peer is on the RPC node's chain (identifyPeer).
// Errors that say the address is not the node cfindexd follows wrap
// ErrNotTheNode.
func dialP2P(ctx context.Context, addr string, btcnet wire.BitcoinNet, transport p2pclient.Transport, identify IdentifyBlock) (*p2pConn, error) {
	opts := connOptions
	opts.Transport = transport
	conn, err := p2pclient.DialConn(ctx, addr, btcnet, opts)
	if err != nil {
		return nil, err
	}
	c := &p2pConn{c: conn, net: btcnet}
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
	case errors.Is(err, ErrNotFound), ictx.Err() != nil:
		return fmt.Errorf("%w: it does not serve block 1 (%s) of the RPC node's chain: a node on the same network but another chain", ErrNotTheNode, hash)
	}
	return err
}

func (c *p2pConn) handshake() error {
	_, err := c.c.Handshake(handshakeOptions)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, p2pclient.ErrMissingServices):
		return fmt.Errorf("node does not serve witness blocks: %w", err)
	case errors.Is(err, p2pclient.ErrRejected):
		return errors.New("node rejected our version")
	case errors.Is(err, p2pclient.ErrNoVersion):
		return c.handshakeError(err)
	}
	return err
}

// handshakeError explains a handshake that failed before the peer sent a
// frame: a frame for another network names that network; bytes that are
// no Bitcoin frame at all, or silence, or a hang-up say the address is not
// a Bitcoin P2P port.
func (c *p2pConn) handshakeError(err error) error {
	var wm *p2pclient.WrongMagicError
	if errors.As(err, &wm) {
		if name, ok := networkName(wm.Got); ok {
			return fmt.Errorf("%w: it is a node on %s, but cfindexd follows %s", ErrNotTheNode, name, netNameOr(c.net))
		}
		if bytes.HasPrefix(wm.Raw[:], []byte("HTTP")) {
			return fmt.Errorf("%w: it answered like an HTTP server (is this the RPC port?)", ErrNotTheNode)
		}
		return fmt.Errorf("%w: it answered %q, which is no Bitcoin P2P message", ErrNotTheNode, wm.Raw[:])
	}
	var nerr net.Error
	if errors.As(err, &nerr) && nerr.Timeout() {
		return fmt.Errorf("%w: it sent no version message within %s", ErrNotTheNode, p2pHandshakeTimeout)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		return fmt.Errorf("%w: %w", ErrNotTheNode, errClosedWithoutVersion)
	}
	return err
}

// errClosedWithoutVersion: the peer hung up on our version message, which
// is how Bitcoin Core and btcd answer a message for another network.
var errClosedWithoutVersion = errors.New("it closed the connection without a version message")

// probeNetwork finds which network the node at addr is on by sending a
// version message with each other network's magic until one is answered
// with a frame of the same magic, in netparams' order (main first). Each
// try is one short connection.
func probeNetwork(ctx context.Context, addr string, not wire.BitcoinNet) (string, bool) {
	for _, nw := range netparams.List() {
		magic := nw.Params.Net
		if magic == not || ctx.Err() != nil {
			continue
		}
		if answersMagic(ctx, addr, magic) {
			return nw.Label(), true
		}
	}
	return "", false
}

// answersMagic sends a version message for magic to addr and reports
// whether the first frame back carries the same magic.
func answersMagic(ctx context.Context, addr string, magic wire.BitcoinNet) bool {
	c, err := p2pclient.DialConn(ctx, addr, magic, p2pclient.ConnOptions{Timeout: p2pDialTimeout, ReadBuffer: 4 << 10, WriteBuffer: 4 << 10})
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	_ = c.Send(c.VersionMessage(handshakeOptions)) // a peer that spoke first may be gone
	_, err = c.ReadFrame(wire.CmdVersion)
	return err == nil
}

// networkName names the network of a P2P magic for messages (netparams'
// label: "test (testnet3)"); ok is false for a magic no known network uses.
func networkName(magic wire.BitcoinNet) (string, bool) {
	nw, ok := netparams.ByMagic(magic)
	return nw.Label(), ok
}

func netNameOr(magic wire.BitcoinNet) string {
	if name, ok := networkName(magic); ok {
		return name
	}
	return fmt.Sprintf("with magic %#08x", uint32(magic))
}

// fetchBlocks sends one getdata of witness blocks for hashes and reads the
// blocks, which the node sends in request order. Pings are answered. Each
// block must hash to the hash asked for at its position. A notfound gives
// ErrNotFound. The connection must not be reused after an error. With
// maxBytes > 0 it stops once the blocks read hold that many bytes and
// returns them; the connection must not be reused then either (the other
// blocks are on their way).
func (c *p2pConn) fetchBlocks(ctx context.Context, hashes []chainhash.Hash, maxBytes int) ([]*wirescan.ScannedBlock, error) {
	stop := context.AfterFunc(ctx, func() { _ = c.c.SetDeadline(time.Now()) })
	defer stop()
	_ = c.c.SetWriteDeadline(time.Now().Add(p2pReadTimeout))
	if err := c.c.GetData(wire.InvTypeWitnessBlock, hashes); err != nil {
		return nil, c.ctxErr(ctx, fmt.Errorf("send getdata: %w", err))
	}
	out := make([]*wirescan.ScannedBlock, 0, len(hashes))
	held := 0
	for len(out) < len(hashes) && (maxBytes <= 0 || held < maxBytes) {
		// The read deadline, and the write deadline of the pongs sent
		// on the way.
		_ = c.c.SetDeadline(time.Now().Add(p2pReadTimeout))
		f, err := c.c.ReadFrame(wire.CmdBlock)
		if err != nil {
			if errors.Is(err, p2pclient.ErrProtocol) {
				err = fmt.Errorf("%w: %w", ErrMalformed, err)
			}
			return nil, c.ctxErr(ctx, fmt.Errorf("read block %s: %w", hashes[len(out)], err))
		}
		switch f.Command {
		case wire.CmdBlock:
			b, err := wirescan.ScanBlock(f.Payload, hashes[len(out)])
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
			}
			out = append(out, b)
			held += len(f.Payload)
		case wire.CmdNotFound:
			return nil, fmt.Errorf("block %s: %w", hashes[len(out)], ErrNotFound)
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

func (c *p2pConn) close() { _ = c.c.Close() }
