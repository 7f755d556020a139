package nodep2p

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/p2pclient"
	"github.com/cfindexd/cfindexd/internal/testtime"
)

// fakePeer accepts one connection and runs answer on it.
func fakePeer(t *testing.T, answer func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				answer(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// A nodep2p that answers as something else than a node of our network
// fails at the handshake with ErrNotTheNode and a reason: the network
// it is on, by name; an HTTP server; bytes of no Bitcoin network.
func TestNodeP2PHandshakeSaysWhatAnswered(t *testing.T) {
	versionOn := func(magic wire.BitcoinNet) func(net.Conn) {
		return func(c net.Conn) {
			_, _, _ = wire.ReadMessage(bufio.NewReader(c), wire.ProtocolVersion, 0) // any magic
			me := wire.NewNetAddressIPPort(net.IPv4(127, 0, 0, 1), 0, wire.SFNodeWitness)
			v := wire.NewMsgVersion(me, me, 1, 0)
			v.Services = wire.SFNodeWitness
			_ = wire.WriteMessage(c, v, wire.ProtocolVersion, magic)
			time.Sleep(time.Second)
		}
	}
	for _, tc := range []struct {
		name   string
		answer func(net.Conn)
		want   string
	}{
		{"mainnet node", versionOn(wire.MainNet), "it is a node on main, but cfindexd follows regtest"},
		{"testnet4 node", versionOn(wire.TestNet4), "it is a node on testnet4, but cfindexd follows regtest"},
		{"testnet3 node", versionOn(wire.TestNet3), "it is a node on test (testnet3), but cfindexd follows regtest"},
		{"HTTP server", func(c net.Conn) {
			_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
			_, _ = io.Copy(io.Discard, c)
		}, "answered like an HTTP server"},
		{"something else", func(c net.Conn) {
			_, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.2\r\n" + strings.Repeat("x", 30)))
			_, _ = io.Copy(io.Discard, c)
		}, "no Bitcoin P2P message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := fakePeer(t, tc.answer)
			ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(20*time.Second))
			defer cancel()
			_, err := dialP2P(ctx, addr, wire.TestNet, p2pclient.TransportV1, nil)
			if !errors.Is(err, ErrNotTheNode) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nodep2p "+addr) {
				t.Fatalf("got %v; want ErrP2PNotTheNode saying %q", err, tc.want)
			}
		})
	}
}

// A peer that hangs up on our version (as nodes do on a message for
// another network) is probed with the other networks' magics and named.
func TestNodeP2PProbesTheNetworkOfAPeerThatHangsUp(t *testing.T) {
	addr := fakePeer(t, func(c net.Conn) {
		var hdr [4]byte
		if _, err := c.Read(hdr[:]); err != nil {
			return
		}
		if wire.BitcoinNet(uint32(hdr[0])|uint32(hdr[1])<<8|uint32(hdr[2])<<16|uint32(hdr[3])<<24) != wire.SigNet {
			return // hang up, as a signet node does on any other magic
		}
		me := wire.NewNetAddressIPPort(net.IPv4(127, 0, 0, 1), 0, 0)
		_ = wire.WriteMessage(c, wire.NewMsgVersion(me, me, 1, 0), wire.ProtocolVersion, wire.SigNet)
		_, _ = io.Copy(io.Discard, c) // a node keeps the connection
	})
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(20*time.Second))
	defer cancel()
	_, err := dialP2P(ctx, addr, wire.SimNet, p2pclient.TransportV1, nil)
	if !errors.Is(err, ErrNotTheNode) || !strings.Contains(err.Error(), "it is a node on signet, but cfindexd follows simnet") {
		t.Fatalf("got %v", err)
	}
}
