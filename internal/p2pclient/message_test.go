package p2pclient

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// ReadMessage decodes any command, answers pings unless told to keep
// them, reads on after a frame wire cannot decode, and refuses declared
// counts and string lengths the payload cannot hold before wire
// allocates for them.
func TestConnReadMessage(t *testing.T) {
	inv := wire.NewMsgInv()
	_ = inv.AddInvVect(wire.NewInvVect(wire.InvTypeTx, &chainhash.Hash{3}))
	in := slicesConcat(
		frameBytes(t, wire.SimNet, wire.NewMsgPing(1)),
		frameBytes(t, wire.SimNet, inv),
		frameBytes(t, wire.SimNet, wire.NewMsgPing(2)),
		rawFrame(wire.SimNet, "sendfoo", 2, []byte{1, 2}, nil),
		frameBytes(t, wire.SimNet, wire.NewMsgVerAck()),
	)
	c := readerOf(in, ConnOptions{ReadBuffer: 64})
	if m, err := c.ReadMessage(); err != nil || m.Command() != wire.CmdInv || m.(*wire.MsgInv).InvList[0].Hash != (chainhash.Hash{3}) {
		t.Fatalf("inv: %v, %v", m, err)
	}
	c.KeepPings(true)
	if m, err := c.ReadMessage(); err != nil || m.(*wire.MsgPing).Nonce != 2 {
		t.Fatalf("kept ping: %v, %v", m, err)
	}
	if _, err := c.ReadMessage(); err == nil {
		t.Fatal("unknown command decoded")
	}
	if m, err := c.ReadMessage(); err != nil || m.Command() != wire.CmdVerAck {
		t.Fatalf("after an unknown command: %v, %v", m, err)
	}

	huge := []byte{0xfe, 0x30, 0xe6, 0x0b, 0x00} // CompactSize 780,000
	for name, frame := range map[string][]byte{
		"tx inputs":      rawFrame(wire.SimNet, "tx", 9, append([]byte{1, 0, 0, 0}, huge...), nil),
		"inv entries":    rawFrame(wire.SimNet, "inv", 5, huge, nil),
		"headers":        rawFrame(wire.SimNet, "headers", 5, huge, nil),
		"reject command": rawFrame(wire.SimNet, "reject", 5, huge, nil),
		"user agent":     rawFrame(wire.SimNet, "version", 85, append(make([]byte, 80), huge...), nil),
	} {
		if _, err := readerOf(frame, ConnOptions{}).ReadMessage(); !errors.Is(err, ErrProtocol) {
			t.Errorf("%s: %v, want ErrProtocol", name, err)
		}
	}
}

// fakeNode answers a version with version and verack (and extra between
// them), and records the commands it reads up to our verack.
func fakeNode(t *testing.T, extra ...wire.Message) (*Conn, <-chan []string) {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	got := make(chan []string, 1)
	go func() {
		defer close(got)
		if _, _, err := wire.ReadMessage(b, wire.ProtocolVersion, wire.SimNet); err != nil {
			return
		}
		me := wire.NewNetAddressIPPort(net.IPv4zero, 0, 0)
		out := append([]wire.Message{wire.NewMsgVersion(me, me, 9, 0)}, extra...)
		go func() { // the pipe is synchronous: write while reading
			for _, m := range append(out, wire.NewMsgVerAck()) {
				if err := wire.WriteMessage(b, m, wire.ProtocolVersion, wire.SimNet); err != nil {
					return
				}
			}
		}()
		var cmds []string
		for {
			var hdr [headerSize]byte
			if _, err := io.ReadFull(b, hdr[:]); err != nil {
				got <- cmds
				return
			}
			h := Header(hdr[:])
			if _, err := io.CopyN(io.Discard, b, int64(h.PayloadLen())); err != nil {
				got <- cmds
				return
			}
			cmds = append(cmds, h.Command())
			if h.Is(wire.CmdVerAck) {
				got <- cmds
				return
			}
		}
	}()
	return NewConn(a, wire.SimNet, ConnOptions{}), got
}

// Handshake sends BeforeVerack between the peer's version and our verack;
// Strict refuses anything else the peer sends before its verack, which a
// lenient handshake skips.
func TestHandshakeBeforeVerackAndStrict(t *testing.T) {
	c, got := fakeNode(t)
	v, err := c.Handshake(HandshakeOptions{BeforeVerack: []wire.Message{wire.NewMsgSendAddrV2(), wire.NewMsgWTxIdRelay()}, Strict: true, Timeout: 5 * time.Second})
	if err != nil || v.Nonce != 9 {
		t.Fatalf("handshake: nonce %d, %v", v.Nonce, err)
	}
	if cmds := <-got; strings.Join(cmds, ",") != "sendaddrv2,wtxidrelay,verack" {
		t.Fatalf("sent %v", cmds)
	}

	c, _ = fakeNode(t, wire.NewMsgSendHeaders())
	if _, err := c.Handshake(HandshakeOptions{Strict: true, Timeout: 5 * time.Second}); !errors.Is(err, ErrProtocol) {
		t.Fatalf("strict handshake with sendheaders: %v", err)
	}
	c, _ = fakeNode(t, wire.NewMsgSendHeaders())
	if _, err := c.Handshake(HandshakeOptions{Timeout: 5 * time.Second}); err != nil {
		t.Fatalf("lenient handshake with sendheaders: %v", err)
	}
}

// FuzzConnReadMessage: any byte stream gives messages or errors (never
// both), never a panic.
func FuzzConnReadMessage(f *testing.F) {
	f.Add(rawFrame(wire.SimNet, "inv", 1, []byte{0}, nil))
	f.Add(rawFrame(wire.SimNet, "tx", 10, []byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0}, nil))
	f.Add(rawFrame(wire.SimNet, "reject", 3, []byte{1, 'x', 0}, nil))
	f.Add(rawFrame(wire.SimNet, "version", 81, make([]byte, 81), nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := readerOf(data, ConnOptions{ReadBuffer: 64})
		for range 4 {
			m, err := c.ReadMessage()
			if (m == nil) == (err == nil) {
				t.Fatalf("message %v with error %v", m, err)
			}
		}
	})
}
