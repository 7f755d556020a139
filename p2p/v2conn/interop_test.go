package v2conn

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/btcsuite/btcd/v2transport"
	"github.com/cfindexd/cfindexd/internal/tcptest"
)

// btcdInitiator runs btcd's v2 peer as the initiator on conn.
func btcdInitiator(conn net.Conn, garbage int, decoys []int) (*v2transport.Peer, error) {
	return btcdPeer(conn, true, garbage, decoys)
}

// btcdPeer runs btcd's v2 peer on conn, as the initiator or the
// responder, sending garbage bytes of garbage and decoys of those sizes.
func btcdPeer(conn net.Conn, initiator bool, garbage int, decoys []int) (*v2transport.Peer, error) {
	if err := conn.SetDeadline(time.Now().Add(testDeadline)); err != nil {
		return nil, err
	}
	p := v2transport.NewPeer()
	p.UseReadWriter(conn)
	if initiator {
		if err := p.InitiateV2Handshake(garbage); err != nil {
			return nil, fmt.Errorf("initiate: %w", err)
		}
	} else if err := p.RespondV2Handshake(garbage, v2transport.BitcoinNet(testNet)); err != nil {
		return nil, fmt.Errorf("respond: %w", err)
	}
	if err := p.CompleteHandshake(initiator, decoys, v2transport.BitcoinNet(testNet)); err != nil {
		return nil, fmt.Errorf("complete: %w", err)
	}
	return p, nil
}

// acceptOn runs Detect and Accept on the server end of a connection.
func acceptOn(ctx context.Context, server net.Conn, cfg Config) (*Conn, error) {
	tr, first, err := Detect(server, cfg.Net, time.Now().Add(testDeadline))
	if err != nil {
		return nil, err
	}
	if tr != V2 {
		return nil, fmt.Errorf("detected %v", tr)
	}
	return Accept(ctx, server, first, cfg)
}

// handshakeWithBTCD connects btcd's initiator to Accept over loopback TCP.
func handshakeWithBTCD(t *testing.T, cfg Config, garbage int, decoys []int) (*v2transport.Peer, *Conn, net.Conn) {
	t.Helper()
	server, client := tcptest.Pair(t)
	type result struct {
		c   *Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := acceptOn(context.Background(), server, cfg)
		done <- result{c, err}
	}()
	peer, err := btcdInitiator(client, garbage, decoys)
	if err != nil {
		t.Fatalf("btcd initiator: %v", err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("accept: %v", r.err)
	}
	return peer, r.c, server
}

// interopMessages are messages in btcd's hands: their contents written out
// byte by byte (short ID or zero and the padded command), not encoded by
// this package.
var interopMessages = []struct {
	command  string
	contents []byte
}{
	{"getcfilters", append([]byte{22, 0, 1, 0, 0, 0}, bytes.Repeat([]byte{0xab}, 32)...)},
	{"getcfheaders", append([]byte{24, 0, 9, 0, 0, 0}, bytes.Repeat([]byte{0xcd}, 32)...)},
	{"getcfcheckpt", append([]byte{26, 0}, bytes.Repeat([]byte{0xef}, 32)...)},
	{"cfilter", []byte{23, 0, 1, 2, 3}},
	{"cfheaders", []byte{25, 9}},
	{"cfcheckpt", []byte{27, 8}},
	{"headers", []byte{13, 0}},
	{"getheaders", []byte{12, 1, 2}},
	{"inv", []byte{14, 0}},
	{"getdata", []byte{11, 0}},
	{"notfound", []byte{17, 0}},
	{"tx", []byte{21, 1, 0, 0, 0}},
	{"block", []byte{2, 7}},
	{"merkleblock", []byte{16, 7}},
	{"filterload", []byte{8, 1, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
	{"filteradd", []byte{6, 1, 0xaa}},
	{"filterclear", []byte{7}},
	{"ping", []byte{18, 1, 2, 3, 4, 5, 6, 7, 8}},
	{"pong", []byte{19, 1, 2, 3, 4, 5, 6, 7, 8}},
	{"feefilter", []byte{5, 0xe8, 3, 0, 0, 0, 0, 0, 0}},
	{"addr", []byte{1, 0}},
	{"addrv2", []byte{28, 0}},
	{"mempool", []byte{15}},
	{"version", append([]byte{0, 'v', 'e', 'r', 's', 'i', 'o', 'n', 0, 0, 0, 0, 0}, 0x7f, 0x11, 1, 0)},
	{"verack", []byte{0, 'v', 'e', 'r', 'a', 'c', 'k', 0, 0, 0, 0, 0, 0}},
	{"sendheaders", []byte{0, 's', 'e', 'n', 'd', 'h', 'e', 'a', 'd', 'e', 'r', 's', 0}},
	{"wtxidrelay", []byte{0, 'w', 't', 'x', 'i', 'd', 'r', 'e', 'l', 'a', 'y', 0, 0}},
}

// TestInteropWithBTCDInitiator: btcd's v2 peer opens the connection; the
// handshake completes with garbage of 0 and 4,095 bytes and with decoys;
// every message of the server travels both ways, short IDs and long
// commands, with decoys in between and past the rekeying interval.
func TestInteropWithBTCDInitiator(t *testing.T) {
	for _, tc := range []struct {
		name       string
		garbage    int
		decoys     []int
		ourGarbage int
	}{
		{"no garbage", 0, nil, 0},
		{"maximal garbage", MaxGarbage, nil, MaxGarbage},
		{"decoys before version", 17, []int{0, 1, 5000}, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig(testNet)
			cfg.MaxGarbage = tc.ourGarbage
			peer, c, _ := handshakeWithBTCD(t, cfg, tc.garbage, tc.decoys)
			if got := c.Stats(); got.GarbageBytes != int64(tc.garbage) || got.DecoyPackets != int64(len(tc.decoys)) {
				t.Fatalf("stats %+v, want %d garbage bytes and %d decoys", got, tc.garbage, len(tc.decoys))
			}
			exchange(t, peer, c)
		})
	}
}

// exchange sends every interop message both ways, ten rounds (540 packets
// from btcd: past the rekeying every 224), with a decoy from btcd before
// each.
func exchange(t *testing.T, peer *v2transport.Peer, c *Conn) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 10 {
		for _, m := range interopMessages {
			decoy := make([]byte, rng.IntN(100))
			if _, _, err := peer.V2EncPacket(decoy, nil, true); err != nil {
				t.Fatal(err)
			}
			if _, _, err := peer.V2EncPacket(m.contents, nil, false); err != nil {
				t.Fatal(err)
			}
			got, err := c.ReadMessage()
			if err != nil {
				t.Fatalf("round %d %s: %v", round, m.command, err)
			}
			cmd, payload, _ := DecodeType(m.contents)
			if got.Command != m.command || !bytes.Equal(got.Payload, payload) || got.Undecodable {
				t.Fatalf("read %q %x, want %q %x", got.Command, got.Payload, m.command, payload)
			}
			got.Release()
			if _, err := c.WriteMessage(cmd, payload); err != nil {
				t.Fatal(err)
			}
			back, err := peer.V2ReceivePacket(nil)
			if err != nil {
				t.Fatalf("btcd reading %s: %v", m.command, err)
			}
			if !bytes.Equal(back, m.contents) {
				t.Fatalf("btcd read %x, want %x", back, m.contents)
			}
		}
	}
	if s := c.Stats(); s.DecoyPackets < int64(10*len(interopMessages)) {
		t.Fatalf("stats %+v", s)
	}
}

// Large messages both ways: a block-sized payload crosses the chunked read
// and the multi-piece write.
func TestInteropLargeMessages(t *testing.T) {
	peer, c, _ := handshakeWithBTCD(t, DefaultConfig(testNet), 5, nil)
	payload := make([]byte, 1_500_000)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	errc := make(chan error, 1)
	go func() {
		_, _, err := peer.V2EncPacket(append([]byte{2}, payload...), nil, false)
		errc <- err
	}()
	m, err := c.ReadMessage()
	if err != nil || m.Command != "block" || !bytes.Equal(m.Payload, payload) {
		t.Fatalf("read %q of %d bytes: %v", m.Command, len(m.Payload), err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := c.WriteMessage("block", payload[:1000], payload[1000:])
		errc <- err
	}()
	back, err := peer.V2ReceivePacket(nil)
	if err != nil || back[0] != 2 || !bytes.Equal(back[1:], payload) {
		t.Fatalf("btcd read %d bytes: %v", len(back), err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// An unknown short ID or long command from btcd is handed up as
// Undecodable (Core drops it) and the connection goes on.
func TestInteropUndecodableKeepsTheConnection(t *testing.T) {
	peer, c, _ := handshakeWithBTCD(t, DefaultConfig(testNet), 0, nil)
	for _, contents := range [][]byte{{29, 1}, {255}, {0, 'x'}, append([]byte{0, 'a', 0, 'b'}, make([]byte, 9)...)} {
		if _, _, err := peer.V2EncPacket(contents, nil, false); err != nil {
			t.Fatal(err)
		}
		m, err := c.ReadMessage()
		if err != nil || !m.Undecodable || m.Command != "" {
			t.Fatalf("%x: %+v %v", contents, m, err)
		}
	}
	if _, _, err := peer.V2EncPacket([]byte{18, 1, 2, 3, 4, 5, 6, 7, 8}, nil, false); err != nil {
		t.Fatal(err)
	}
	if m, err := c.ReadMessage(); err != nil || m.Command != "ping" {
		t.Fatalf("%+v %v", m, err)
	}
}
