package p2p

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/p2pclient"
	"github.com/cfindexd/cfindexd/internal/testtime"
)

// ioTimeout bounds every single read or write of a test client.
const ioTimeout = 10 * time.Second

// testServer is a Server serving on loopback for one test.
type testServer struct {
	*Server
	addr string
	view *fakeView
}

// testConfig returns a config for a fake view with short timeouts.
func testConfig(view *fakeView) Config {
	return Config{
		Params:            &chaincfg.RegressionNetParams,
		View:              view,
		MaxPeersPerIP:     1000,
		MaxPeersPerSubnet: 1000,
		MaxPeers:          1000,
		StopHashWait:      2 * time.Second,
		HandshakeTimeout:  5 * time.Second,
		Log:               testLogger(),
	}
}

// testLogger logs to stderr when P2P_TEST_LOG is set, else nowhere.
func testLogger() zerolog.Logger {
	if os.Getenv("P2P_TEST_LOG") != "" {
		return zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr}).Level(zerolog.DebugLevel).With().Timestamp().Logger()
	}
	return zerolog.Nop()
}

// startServer serves cfg on 127.0.0.1:0 until the test ends.
func startServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Serve did not return after cancel")
		}
	})
	view, _ := cfg.View.(*fakeView)
	return &testServer{Server: s, addr: ln.Addr().String(), view: view}
}

// rawClient is a test's P2P client: a p2pclient.Conn whose helpers fail
// the test on error and decode every message they read.
type rawClient struct {
	t testing.TB
	*p2pclient.Conn
	// conn is the underlying connection, for closing it.
	conn net.Conn
	// keepPings returns the server's pings from tryRead instead of
	// answering them.
	keepPings bool
}

// dial connects without a handshake.
func dial(t testing.TB, addr string) *rawClient {
	t.Helper()
	return dialFrom(t, addr, "")
}

// dialFrom connects from the local address ip (any of 127.0.0.0/8 on
// Linux, standing in for another host; "" lets the system choose).
func dialFrom(t testing.TB, addr, ip string) *rawClient {
	t.Helper()
	c, err := tryDialFrom(t, addr, ip)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tryDialFrom is dialFrom returning the error.
func tryDialFrom(t testing.TB, addr, ip string) (*rawClient, error) {
	return tryDialNet(t, addr, ip, chaincfg.RegressionNetParams.Net)
}

// tryDialNet is tryDialFrom for the network of magic.
func tryDialNet(t testing.TB, addr, ip string, magic wire.BitcoinNet) (*rawClient, error) {
	pc, err := p2pclient.DialConn(context.Background(), addr, magic, p2pclient.ConnOptions{LocalIP: ip, Timeout: ioTimeout})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = pc.Close() })
	return &rawClient{t: t, Conn: pc, conn: pc.NetConn()}, nil
}

// connectFrom dials from ip and completes the handshake.
func connectFrom(t testing.TB, addr, ip string, extra ...wire.Message) *rawClient {
	t.Helper()
	c := dialFrom(t, addr, ip)
	c.handshake(extra...)
	return c
}

// connect dials and completes the handshake, returning the server's version.
func connect(t testing.TB, addr string, extra ...wire.Message) (*rawClient, *wire.MsgVersion) {
	t.Helper()
	c := dial(t, addr)
	v := c.handshake(extra...)
	return c, v
}

// handshake sends version (then extra messages before verack) and reads
// the server's version and verack, failing on any other message.
func (c *rawClient) handshake(extra ...wire.Message) *wire.MsgVersion {
	c.t.Helper()
	sv, err := c.Handshake(p2pclient.HandshakeOptions{
		Services:     wire.SFNodeWitness,
		Relay:        true,
		Nonce:        42,
		BeforeVerack: extra,
		Strict:       true,
		Timeout:      ioTimeout,
	})
	if err != nil {
		c.t.Fatalf("handshake: %v", err)
	}
	return &sv
}

func (c *rawClient) send(msg wire.Message) {
	c.t.Helper()
	if err := c.trySend(msg); err != nil {
		c.t.Fatalf("send %s: %v", msg.Command(), err)
	}
}

func (c *rawClient) trySend(msg wire.Message) error {
	_ = c.SetWriteDeadline(time.Now().Add(ioTimeout))
	return c.Send(msg)
}

// writeRaw writes b as it is (a malformed frame, or part of one).
func (c *rawClient) writeRaw(b []byte) error {
	_ = c.SetWriteDeadline(time.Now().Add(ioTimeout))
	return c.WriteRaw(b)
}

// read returns the next message, failing the test on error.
func (c *rawClient) read() wire.Message {
	c.t.Helper()
	m, err := c.tryRead(ioTimeout)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return m
}

// tryRead returns the next message other than the server's pings, which it
// answers as a well-behaved client does (so that tests see only answers),
// unless keepPings is set.
func (c *rawClient) tryRead(timeout time.Duration) (wire.Message, error) {
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	c.KeepPings(c.keepPings)
	return c.ReadMessage()
}

// sync sends a ping and returns every message received before its pong:
// since the server handles a peer's messages in order, everything the
// server sent in answer to earlier messages is in the result.
func (c *rawClient) sync() []wire.Message {
	c.t.Helper()
	nonce := uint64(time.Now().UnixNano())
	c.send(wire.NewMsgPing(nonce))
	var got []wire.Message
	for {
		m := c.read()
		if p, ok := m.(*wire.MsgPong); ok && p.Nonce == nonce {
			return got
		}
		got = append(got, m)
	}
}

// expectDisconnect reads until the server closes the connection.
func (c *rawClient) expectDisconnect() {
	c.t.Helper()
	deadline := time.Now().Add(ioTimeout)
	for time.Now().Before(deadline) {
		_, err := c.tryRead(time.Until(deadline))
		if err == nil {
			continue
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isConnReset(err) {
			return
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			break
		}
		// Other decode errors: keep reading until the close.
	}
	c.t.Fatalf("server did not disconnect within %v", ioTimeout)
}

func isConnReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// waitFor polls cond until it holds or the deadline passes; the deadline
// is stretched on a loaded machine (testtime.Scale).
func waitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	timeout = testtime.Scale(timeout)
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func hashPtr(h chainhash.Hash) *chainhash.Hash { return &h }

// pipePeer builds a peer of s over conn (one end of a net.Pipe) as if
// admitted from 127.0.0.1.
func pipePeer(t testing.TB, s *Server, conn net.Conn) *peer {
	t.Helper()
	_, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	slot, reason := s.admit(netip.MustParseAddr("127.0.0.1"), newPeerState(1, 2), cancel)
	if slot == nil {
		t.Fatalf("admission refused: %s", reason)
	}
	return newPeer(s, conn, slot)
}

// writingPipePeer starts a server with cfg and a peer of it on a
// synchronous pipe (nothing is buffered in the kernel, so the peer's send
// budget alone holds what it has not read), whose write loop runs until the
// test ends. It returns the server, the peer, the pipe's far end and the
// peer's context.
func writingPipePeer(t *testing.T, cfg Config) (*Server, *peer, net.Conn, context.Context) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := net.Pipe()
	t.Cleanup(func() { ours.Close(); theirs.Close() })
	p := pipePeer(t, s, ours)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = p.writeLoop(ctx) }()
	return s, p, theirs, ctx
}
