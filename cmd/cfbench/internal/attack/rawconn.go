package attack

import (
	"context"
	"net"
	"time"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/p2pclient"
)

// hostileIOTimeout bounds an attacker's dial, handshake and each write.
const hostileIOTimeout = 10 * time.Second

// rawConn is an attacker's P2P connection from a 127.x.y.z source
// address: it writes frames and raw bytes, and reads frames without
// reading their payloads (attackers must not spend this process's CPU or
// memory on the answers: the daemon is what is measured, on the same
// machine).
type rawConn struct {
	c *p2pclient.Conn
}

// dialFrom connects to addr from localIP.
func dialFrom(ctx context.Context, addr, localIP string, magic wire.BitcoinNet) (*rawConn, error) {
	c, err := p2pclient.DialConn(ctx, addr, magic, p2pclient.ConnOptions{
		LocalIP: localIP, Timeout: hostileIOTimeout, ReadBuffer: 4 << 10, WriteBuffer: 4 << 10,
	})
	if err != nil {
		return nil, err
	}
	return &rawConn{c: c}, nil
}

// write sends raw bytes under hostileIOTimeout.
func (c *rawConn) write(b []byte) error {
	_ = c.c.SetWriteDeadline(time.Now().Add(hostileIOTimeout))
	return c.c.WriteRaw(b)
}

// send writes msg as a frame.
func (c *rawConn) send(msg wire.Message) error {
	_ = c.c.SetWriteDeadline(time.Now().Add(hostileIOTimeout))
	return c.c.Send(msg)
}

// readCommand reads one frame, discarding its payload, answers pings,
// and returns the frame's command and payload size.
func (c *rawConn) readCommand(timeout time.Duration) (string, int, error) {
	_ = c.c.SetReadDeadline(time.Now().Add(timeout))
	return c.c.Skip()
}

// handshake sends version (relay: the fRelay flag) and completes the
// handshake: the server's version and verack are read, verack sent.
func (c *rawConn) handshake(relay bool) error {
	_, err := c.c.Handshake(p2pclient.HandshakeOptions{
		Relay: relay, UserAgent: "/cfbench-hostile:0.1/", Timeout: hostileIOTimeout,
	})
	return err
}

// drain reads and discards frames (answering pings) until the connection
// closes or fails.
func (c *rawConn) drain() {
	for {
		if _, _, err := c.readCommand(time.Hour); err != nil {
			return
		}
	}
}

// closedWithin reports whether the server closes the connection within d.
func (c *rawConn) closedWithin(d time.Duration) bool {
	_ = c.c.SetReadDeadline(time.Now().Add(d))
	ne, ok := c.c.DiscardAll().(net.Error) // never nil
	return !(ok && ne.Timeout())
}

// close closes the connection.
func (c *rawConn) close() { _ = c.c.Close() }

// closeWith closes the connection when ctx ends, and returns a function
// that closes it at once (for a defer when the caller is done with it).
func (c *rawConn) closeWith(ctx context.Context) func() {
	stop := context.AfterFunc(ctx, c.close)
	return func() {
		stop()
		c.close()
	}
}
