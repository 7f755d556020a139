package p2p

import (
	"bytes"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	btcdpeer "github.com/btcsuite/btcd/peer"
	"github.com/btcsuite/btcd/wire/v2"
)

// btcdClient is btcd's own peer (package peer: its v2 transport, its
// message framing), outbound to the server: a client cfindexd did not
// write. Every message it reads is recorded, pings and pongs aside.
type btcdClient struct {
	p    *btcdpeer.Peer
	msgs chan wire.Message
}

// dialBTCD connects btcd's peer to addr over v2 or v1 and waits for the
// version handshake.
func dialBTCD(t *testing.T, addr string, v2 bool) *btcdClient {
	t.Helper()
	c := &btcdClient{msgs: make(chan wire.Message, 4096)}
	verack := make(chan struct{}, 1)
	cfg := &btcdpeer.Config{
		UserAgentName:       "cfindexd-v2-interop",
		UserAgentVersion:    "1.0",
		ChainParams:         &chaincfg.RegressionNetParams,
		Services:            wire.SFNodeWitness,
		ProtocolVersion:     ProtocolVersion,
		DisableStallHandler: true,
		UsingV2Conn:         v2,
		Listeners: btcdpeer.MessageListeners{
			OnVerAck: func(*btcdpeer.Peer, *wire.MsgVerAck) { verack <- struct{}{} },
			OnRead: func(_ *btcdpeer.Peer, _ int, msg wire.Message, err error) {
				if err != nil || msg == nil {
					return
				}
				switch msg.(type) {
				case *wire.MsgPing, *wire.MsgVerAck, *wire.MsgVersion, *wire.MsgSendAddrV2, *wire.MsgSendHeaders, *wire.MsgWTxIdRelay:
					return
				}
				c.msgs <- msg
			},
		},
	}
	if v2 {
		cfg.Services |= wire.SFNodeP2PV2 // btcd's peer speaks v2 only when it offers it
	}
	p, err := btcdpeer.NewOutboundPeer(cfg, addr)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p.AssociateConnection(conn)
	t.Cleanup(func() { p.Disconnect(); p.WaitForDisconnect() })
	select {
	case <-verack:
	case <-time.After(ioTimeout):
		t.Fatalf("btcd peer (v2 %v): no verack", v2)
	}
	if p.StatsSnapshot().V2Connection != v2 {
		t.Fatalf("btcd peer: v2 connection %v, want %v", p.StatsSnapshot().V2Connection, v2)
	}
	c.p = p
	return c
}

// ask sends msgs and a ping, and returns every message read until its
// pong, encoded: the answer, whole, in order.
func (c *btcdClient) ask(t *testing.T, nonce uint64, msgs ...wire.Message) [][]byte {
	t.Helper()
	for _, m := range append(msgs, wire.NewMsgPing(nonce)) {
		c.p.QueueMessage(m, nil)
	}
	var out [][]byte
	timeout := time.After(2 * ioTimeout)
	for {
		select {
		case m := <-c.msgs:
			if pong, ok := m.(*wire.MsgPong); ok {
				if pong.Nonce == nonce {
					return out
				}
				continue
			}
			var b bytes.Buffer
			if err := m.BtcEncode(&b, ProtocolVersion, wire.WitnessEncoding); err != nil {
				t.Fatal(err)
			}
			out = append(out, append([]byte(m.Command()+":"), b.Bytes()...))
		case <-timeout:
			t.Fatalf("no pong %d after %d messages", nonce, len(out))
		}
	}
}

// TestBTCDPeerV2GetsTheV1Answers: btcd's peer package, speaking BIP-324
// v2 to the server, runs the whole BIP-157 exchange (getcfcheckpt,
// getcfheaders, getcfilters to the tip), getheaders, a proxied block and,
// with BIP-37, a filtered block; every answer is byte-identical to the one
// the same server gives btcd's peer over v1, and the server counts one
// peer on each transport.
func TestBTCDPeerV2GetsTheV1Answers(t *testing.T) {
	c := newBloomChain(t, 1100, 2, 18)
	srv := startServer(t, c.bloomConfig())
	tip := c.blocks[len(c.blocks)-1].BlockHash()
	genesis := c.blocks[0].BlockHash()
	filterBlock := c.blocks[700].BlockHash()
	walletLoad := walletFilter(t, wire.BloomUpdateNone, c.keys[700][1], c.keys[700][2]).MsgFilterLoad()

	steps := []struct {
		name string
		msgs func() []wire.Message
		min  int // answers expected at least
	}{
		{"getcfcheckpt", func() []wire.Message { return []wire.Message{wire.NewMsgGetCFCheckpt(wire.GCSFilterRegular, &tip)} }, 1},
		{"getcfheaders", func() []wire.Message {
			return []wire.Message{wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 1, &tip)}
		}, 1},
		{"getcfilters to the tip", func() []wire.Message {
			mid := c.blocks[1000].BlockHash()
			return []wire.Message{wire.NewMsgGetCFilters(wire.GCSFilterRegular, 1, &mid),
				wire.NewMsgGetCFilters(wire.GCSFilterRegular, 1001, &tip)}
		}, 1099},
		{"getheaders", func() []wire.Message {
			gh := wire.NewMsgGetHeaders()
			_ = gh.AddBlockLocatorHash(&genesis)
			return []wire.Message{gh}
		}, 1},
		{"proxied block", func() []wire.Message {
			gd := wire.NewMsgGetData()
			_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeWitnessBlock, hashPtr(c.blocks[900].BlockHash())))
			return []wire.Message{gd}
		}, 1},
		{"filtered block", func() []wire.Message {
			gd := wire.NewMsgGetData()
			_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeFilteredBlock, &filterBlock))
			return []wire.Message{walletLoad, gd}
		}, 2},
	}
	answers := map[bool][][][]byte{}
	for _, v2 := range []bool{false, true} {
		client := dialBTCD(t, srv.addr, v2)
		for i, s := range steps {
			got := client.ask(t, uint64(1000+i), s.msgs()...)
			if len(got) < s.min {
				t.Fatalf("v2 %v, %s: %d messages, want at least %d", v2, s.name, len(got), s.min)
			}
			answers[v2] = append(answers[v2], got)
		}
		if v2 {
			waitFor(t, "a v1 and a v2 peer", ioTimeout, func() bool {
				st := srv.TransportStats()
				return st[0].Peers == 1 && st[1].Peers == 1 && st[1].BytesSent > 0 && st[1].BytesReceived > 0
			})
		}
	}
	for i, s := range steps {
		if err := sameAnswers(answers[false][i], answers[true][i]); err != nil {
			t.Errorf("%s: %v", s.name, err)
		}
	}
}

// sameAnswers compares two answers message by message.
func sameAnswers(v1, v2 [][]byte) error {
	if len(v1) != len(v2) {
		return fmt.Errorf("%d messages over v2, %d over v1", len(v2), len(v1))
	}
	for k := range v1 {
		if !bytes.Equal(v1[k], v2[k]) {
			return fmt.Errorf("message %d differs: %.40q over v2, %.40q over v1", k, v2[k], v1[k])
		}
	}
	return nil
}
