package attack

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/p2p/v2conn"
)

// rawV2 is an attacker's BIP-324 connection from a 127.x.y.z source
// address: the socket, and the v2 connection once v2conn.Initiate has run
// the handshake on it (the attack classes then write what no honest peer
// does: decoy floods, declared lengths without packets).
type rawV2 struct {
	nc net.Conn
	v2 *v2conn.Conn
}

// dialSocket connects to env's P2P address from ip without sending a
// byte, counting the connection (and a refusal, after which it pauses a
// second); nil when it failed.
func dialSocket(ctx context.Context, env Env, ip string, t *Tally) net.Conn {
	d := net.Dialer{Timeout: hostileIOTimeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	nc, err := d.DialContext(ctx, "tcp", env.P2PAddr)
	if err != nil {
		t.Refused.Add(1)
		Pause(ctx, time.Second)
		return nil
	}
	t.Conns.Add(1)
	return nc
}

// connectV2 dials from ip and runs the v2 handshake and, when p2p, the
// version/verack exchange over it; it counts the connection, and a
// refusal when either failed; nil then.
func connectV2(ctx context.Context, env Env, ip string, p2p bool, t *Tally) *rawV2 {
	nc := dialSocket(ctx, env, ip, t)
	if nc == nil {
		return nil
	}
	cfg := v2conn.DefaultConfig(env.Params.Net)
	cfg.HandshakeTimeout = hostileIOTimeout
	v2, err := v2conn.Initiate(ctx, nc, cfg)
	c := &rawV2{nc: nc, v2: v2}
	if err == nil && p2p {
		err = c.versionHandshake()
	}
	if err != nil {
		nc.Close()
		t.Refused.Add(1)
		Pause(ctx, time.Second)
		return nil
	}
	return c
}

// versionHandshake sends a light client's version, reads the server's
// messages up to its verack and sends verack.
func (c *rawV2) versionHandshake() error {
	me := wire.NewNetAddressIPPort(net.IPv4zero, 0, 0)
	v := wire.NewMsgVersion(me, me, randomNonce(), 0)
	v.UserAgent, v.DisableRelayTx = "/cfbench-hostile:0.1/", true
	if err := c.send(v); err != nil {
		return err
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(hostileIOTimeout))
	defer c.nc.SetReadDeadline(time.Time{})
	for {
		m, err := c.v2.ReadTransient()
		if err != nil {
			return fmt.Errorf("v2 handshake: %w", err)
		}
		if m.Command == wire.CmdVerAck {
			return c.send(wire.NewMsgVerAck())
		}
	}
}

// send writes msg as one v2 message under hostileIOTimeout.
func (c *rawV2) send(msg wire.Message) error {
	var payload bytes.Buffer
	if err := msg.BtcEncode(&payload, wire.ProtocolVersion, wire.BaseEncoding); err != nil {
		return err
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(hostileIOTimeout))
	_, err := c.v2.WriteMessage(msg.Command(), payload.Bytes())
	return err
}

// drainInBackground reads and drops the server's messages (pongs, inv,
// ...) until the connection fails, so that the server never finds this
// peer not reading. Reads may run beside the writes of one goroutine.
func (c *rawV2) drainInBackground() {
	go func() {
		for {
			if _, err := c.v2.ReadTransient(); err != nil {
				return
			}
		}
	}()
}

// close closes the socket.
func (c *rawV2) close() { _ = c.nc.Close() }

// closedWithin reports whether the server closes nc within d (bytes it
// sends are dropped unread: the attacker spends nothing on them).
func closedWithin(nc net.Conn, d time.Duration) bool {
	_ = nc.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, nc)
	ne, ok := err.(net.Error)
	return !(ok && ne.Timeout())
}

// randomBytes returns n random bytes.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// randomNonce is a version nonce.
func randomNonce() uint64 { return binary.LittleEndian.Uint64(randomBytes(8)) }
