package p2pclient

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/p2p/v2conn"
)

const testMagic = wire.TestNet

// testDeadline bounds every blocking step of these tests, generously.
var testDeadline = testtime.Scale(30 * time.Second)

// serveOne accepts one connection on a loopback listener, tells v1 from
// v2 by its first bytes, and hands it to v1 or v2 (a nil handler hangs
// up, as a peer without that transport does). It returns the address.
func serveOne(t *testing.T, v1 func(nc net.Conn, first []byte), v2 func(c *v2conn.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(testDeadline))
		tr, first, err := v2conn.Detect(nc, testMagic, time.Now().Add(testDeadline))
		switch {
		case err != nil:
		case tr == v2conn.V1 && v1 != nil:
			v1(nc, first)
		case tr == v2conn.V2 && v2 != nil:
			c, err := v2conn.Accept(context.Background(), nc, first, v2conn.DefaultConfig(testMagic))
			if err != nil {
				t.Errorf("accept: %v", err)
				return
			}
			v2(c)
		}
	}()
	return ln.Addr().String()
}

// payloadOf encodes msg's payload.
func payloadOf(t *testing.T, msg wire.Message) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := msg.BtcEncode(&b, wire.ProtocolVersion, wire.WitnessEncoding); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// v2Handshake is a node's side of the version handshake over v2: it
// answers the client's version with its own (services) and a verack, and
// waits for the client's verack.
func v2Handshake(t *testing.T, c *v2conn.Conn, services wire.ServiceFlag) bool {
	t.Helper()
	for _, want := range []string{wire.CmdVersion, wire.CmdVerAck} {
		m, err := c.ReadMessage()
		if err != nil || m.Command != want {
			t.Errorf("server read %q, want %s: %v", m.Command, want, err)
			return false
		}
		if want == wire.CmdVersion {
			v := wire.NewMsgVersion(wire.NewNetAddressIPPort(net.IPv4zero, 0, services), wire.NewNetAddressIPPort(net.IPv4zero, 0, 0), 7, 0)
			v.Services = services
			if _, err := c.WriteMessage(wire.CmdVersion, payloadOf(t, v)); err != nil {
				t.Error(err)
				return false
			}
			if _, err := c.WriteMessage(wire.CmdVerAck); err != nil {
				t.Error(err)
				return false
			}
		}
	}
	return true
}

// Over v2 every way to read and write works as over v1: ReadRaw (a made-up
// header, the payload in place), ReadFrame with its keep-list, Skip,
// ReadMessage (decoded by wire), pings answered on the way, WriteRaw's v1
// frames translated (split anywhere) and refused when they are not v1
// frames of our network, DiscardAll until the hang-up; the socket's bytes
// are counted.
func TestConnOverV2(t *testing.T) {
	filter := wire.NewMsgCFilter(wire.GCSFilterRegular, &chainhash.Hash{1}, bytes.Repeat([]byte{7}, 20_000))
	got := make(chan v2conn.Message, 4)
	addr := serveOne(t, nil, func(c *v2conn.Conn) {
		if !v2Handshake(t, c, wire.SFNodeCF|wire.SFNodeP2PV2) {
			return
		}
		for _, m := range []wire.Message{wire.NewMsgPing(42), filter, wire.NewMsgFeeFilter(5), filter, wire.NewMsgSendHeaders(), filter} {
			if _, err := c.WriteMessage(m.Command(), payloadOf(t, m)); err != nil {
				t.Error(err)
				return
			}
		}
		for range 2 { // the pong, then WriteRaw's frame
			m, err := c.ReadMessage()
			if err != nil {
				t.Error(err)
				return
			}
			got <- m
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	c, err := DialConn(ctx, addr, testMagic, ConnOptions{Transport: TransportV2, Timeout: testDeadline})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Transport() != TransportV2 {
		t.Fatalf("transport %v", c.Transport())
	}
	v, err := c.Handshake(HandshakeOptions{Require: wire.SFNodeCF, Strict: true})
	if err != nil || v.Services&wire.SFNodeP2PV2 == 0 {
		t.Fatalf("handshake: %v (services %v)", err, v.Services)
	}

	f, err := c.ReadRaw(wire.MaxMessagePayload)
	want := frameBytes(t, testMagic, filter)
	if err != nil || !bytes.Equal(f.Header[:20], want[:20]) || !bytes.Equal(f.Payload, want[headerSize:]) {
		t.Fatalf("raw frame %q: %v", f.Header.Command(), err)
	}
	if pong := <-got; pong.Command != wire.CmdPong || !bytes.Equal(pong.Payload, payloadOf(t, wire.NewMsgPong(42))) {
		t.Fatalf("pong %q %x", pong.Command, pong.Payload)
	}
	if cmd, n, err := c.Skip(); err != nil || cmd != wire.CmdFeeFilter || n != 8 {
		t.Fatalf("skip: %q %d %v", cmd, n, err)
	}
	if f, err := c.ReadFrame(wire.CmdFeeFilter); err != nil || f.Command != wire.CmdCFilter || f.Payload != nil {
		t.Fatalf("skipped frame: %q %d bytes, %v", f.Command, len(f.Payload), err)
	}
	if f, err := c.ReadFrame(wire.CmdCFilter); err != nil || f.Command != wire.CmdSendHeaders {
		t.Fatalf("frame: %q %v", f.Command, err)
	}
	m, err := c.ReadMessage()
	if cf, ok := m.(*wire.MsgCFilter); err != nil || !ok || !bytes.Equal(cf.Data, filter.Data) {
		t.Fatalf("message %T: %v", m, err)
	}

	raw := frameBytes(t, testMagic, wire.NewMsgGetCFCheckpt(wire.GCSFilterRegular, &chainhash.Hash{9}))
	for _, part := range [][]byte{raw[:5], raw[5:30], raw[30:]} {
		if err := c.WriteRaw(part); err != nil {
			t.Fatal(err)
		}
	}
	if m := <-got; m.Command != wire.CmdGetCFCheckpt || !bytes.Equal(m.Payload, raw[headerSize:]) {
		t.Fatalf("server read %q %x", m.Command, m.Payload)
	}
	if err := c.WriteRaw(frameBytes(t, wire.MainNet, wire.NewMsgVerAck())); !errors.Is(err, ErrUntranslatable) {
		t.Fatalf("another network's frame: %v", err)
	}
	if c.BytesRead() < 3*20_000 || c.BytesWritten() < v2conn.KeySize+int64(len(raw)) {
		t.Fatalf("bytes read %d, written %d", c.BytesRead(), c.BytesWritten())
	}
	// The server hangs up after the two messages: DiscardAll sees it.
	if err := c.DiscardAll(); !errors.Is(err, io.EOF) {
		t.Fatalf("discard all: %v", err)
	}
}

// v1Handshake is a v1-only node's side of the version handshake on nc,
// whose first bytes Detect read.
func v1Handshake(t *testing.T, nc net.Conn, first []byte) {
	t.Helper()
	c := NewConn(&replayConn{nc, io.MultiReader(bytes.NewReader(first), nc)}, testMagic, ConnOptions{})
	if f, err := c.ReadFrame(); err != nil || f.Command != wire.CmdVersion {
		t.Errorf("server read %q: %v", f.Command, err)
		return
	}
	v := wire.NewMsgVersion(wire.NewNetAddressIPPort(net.IPv4zero, 0, 0), wire.NewNetAddressIPPort(net.IPv4zero, 0, 0), 7, 0)
	v.Services = wire.SFNodeCF
	if err := c.Send(v); err != nil {
		t.Error(err)
		return
	}
	if err := c.Send(wire.NewMsgVerAck()); err != nil {
		t.Error(err)
		return
	}
	if f, err := c.ReadFrame(); err != nil || f.Command != wire.CmdVerAck {
		t.Errorf("server read %q: %v", f.Command, err)
	}
}

// TransportAuto: a v2 peer gets v2; a v1-only peer, which hangs up on our
// key, gets a second connection over v1 (Core's v1 fallback); TransportV2
// against it fails with v2conn.ErrV1Only.
func TestTransportAuto(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	dial := func(addr string, tr Transport) (*Conn, error) {
		c, err := DialConn(ctx, addr, testMagic, ConnOptions{Transport: tr, Timeout: testDeadline})
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { c.Close() })
		_, err = c.Handshake(HandshakeOptions{Timeout: testDeadline})
		return c, err
	}

	v2Addr := serveOne(t, nil, func(c *v2conn.Conn) { v2Handshake(t, c, wire.SFNodeP2PV2) })
	if c, err := dial(v2Addr, TransportAuto); err != nil || c.Transport() != TransportV2 {
		t.Fatalf("v2 peer: %v", err)
	}

	// A v1-only node: its first connection (our key) is closed unread, the
	// second answered over v1.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			_ = nc.SetDeadline(time.Now().Add(testDeadline))
			tr, first, err := v2conn.Detect(nc, testMagic, time.Now().Add(testDeadline))
			if err == nil && tr == v2conn.V1 {
				v1Handshake(t, nc, first)
			}
			nc.Close()
		}
	}()
	if _, err := dial(ln.Addr().String(), TransportV2); !errors.Is(err, v2conn.ErrV1Only) {
		t.Fatalf("v2 only against a v1 node: %v", err)
	}
	if c, err := dial(ln.Addr().String(), TransportAuto); err != nil || c.Transport() != TransportV1 {
		t.Fatalf("auto against a v1 node: %v", err)
	}
}

// replayConn reads r (bytes already read, then the connection).
type replayConn struct {
	net.Conn
	r io.Reader
}

func (rc *replayConn) Read(b []byte) (int, error) { return rc.r.Read(b) }

func TestParseTransport(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Transport
		ok   bool
	}{
		{"v1", TransportV1, true}, {"v2", TransportV2, true}, {"auto", TransportAuto, true},
		{"", 0, false}, {"V2", 0, false}, {"v3", 0, false},
	} {
		got, err := ParseTransport(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%q: %v %v", tc.in, got, err)
		}
	}
}
