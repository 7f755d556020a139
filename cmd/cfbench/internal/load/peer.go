package load

import (
	"context"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/p2pclient"
)

// maxFramePayload bounds a frame the load peer accepts, checked before it
// reads the payload (wire.MaxMessagePayload).
const maxFramePayload = wire.MaxMessagePayload

// Peer is a minimal BIP-157 light client on one p2pclient.Conn: it
// reads responses as raw frames in place in its read buffer (no copy, no
// decoding, no checksum, no allocation), so that the load generator spends
// as little CPU per filter as possible: it shares the machine with the
// server it measures. The caller checks each frame's bytes against the
// expected answers. It is not safe for concurrent use.
type Peer struct {
	*p2pclient.Conn
}

// peerReadBuffer sizes a load peer's read buffer: a full cfheaders answer
// (2,000 hashes, 64,092 bytes) and most cfilter frames are read in place.
const peerReadBuffer = 64 << 10

// Dial connects to addr and completes the version/verack handshake as
// a light client (no services, no tx relay) within timeout.
func Dial(addr string, params *chaincfg.Params, nonce uint64, timeout time.Duration) (*Peer, error) {
	return DialFrom(addr, "", params, nonce, timeout)
}

// DialFrom is Dial from the local address localIP (any when
// empty): hostile's clients stand in for many hosts with 127.x.y.z source
// addresses.
func DialFrom(addr, localIP string, params *chaincfg.Params, nonce uint64, timeout time.Duration) (*Peer, error) {
	return DialOver(addr, localIP, p2pclient.TransportV1, params, nonce, timeout)
}

// DialOver is DialFrom over transport t (the v2 handshake, if any, within
// timeout too).
func DialOver(addr, localIP string, t p2pclient.Transport, params *chaincfg.Params, nonce uint64, timeout time.Duration) (*Peer, error) {
	c, err := p2pclient.DialConn(context.Background(), addr, params.Net, p2pclient.ConnOptions{
		LocalIP: localIP, Timeout: timeout, ReadBuffer: peerReadBuffer, WriteBuffer: 4 << 10, Transport: t,
	})
	if err != nil {
		return nil, err
	}
	if _, err := c.Handshake(p2pclient.HandshakeOptions{
		Require: wire.SFNodeCF, Nonce: nonce, UserAgent: "/cfbench:0.1/", Timeout: timeout,
	}); err != nil {
		c.Close()
		return nil, fmt.Errorf("handshake with %s: %w", addr, err)
	}
	return &Peer{c}, nil
}

// send writes msg and flushes.
func (p *Peer) send(msg wire.Message) error { return p.Send(msg) }

// read returns the next frame, answering pings on the way, valid until
// the next read. The checksum is not verified here: the caller compares
// the whole frame, checksum included, with the one it expects (over v2
// the header is made up and has no checksum: see sums).
func (p *Peer) read() (p2pclient.RawFrame, error) { return p.ReadRaw(maxFramePayload) }

// sums reports whether frames read carry the v1 checksum: not over v2,
// whose made-up headers have four zero bytes in its place.
func (p *Peer) sums() bool { return p.Transport() != p2pclient.TransportV2 }
