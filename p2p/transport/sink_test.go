package transport

import (
	"bytes"
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"

	"github.com/cfindexd/cfindexd/internal/tcptest"
	"github.com/cfindexd/cfindexd/p2p/v2conn"
	"github.com/cfindexd/cfindexd/wireframe"
)

// v2Link runs the v2 handshake over loopback TCP, the server's end
// through Establish with a write buffer of writeBuffer bytes, and returns
// the server's link, its connection and the initiator's Conn.
func v2Link(t testing.TB, writeBuffer int) (Link, *discardConn, *v2conn.Conn) {
	t.Helper()
	magic := chaincfg.RegressionNetParams.Net
	server, client := tcptest.Pair(t)
	dc := &discardConn{Conn: server}
	o := Options{
		Net:               magic,
		HandshakeDeadline: time.Now().Add(time.Minute),
		WriteTimeout:      time.Minute,
		ReadBuffer:        64 << 10,
		WriteBuffer:       writeBuffer,
		Now:               time.Now,
	}
	type result struct {
		c   *v2conn.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := v2conn.Initiate(context.Background(), client, v2conn.DefaultConfig(magic))
		done <- result{c, err}
	}()
	link, err := Establish(context.Background(), dc, o, V1(dc, o))
	if err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if link.Transport != v2conn.V2 {
		t.Fatalf("transport %v", link.Transport)
	}
	if err := client.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	return link, dc, r.c
}

// TestV2SinkRoundTrip: entries written through the v2 sink — a chunk of
// cfilters filling the write buffer several times over, a message larger
// than the buffer, a payload split between frame and payload, a command
// without a short ID and an empty payload — reach a v2 initiator as the
// same messages, in order.
func TestV2SinkRoundTrip(t *testing.T) {
	link, _, client := v2Link(t, 4096)
	type msg struct {
		cmd     string
		payload []byte
	}
	var want []msg
	var entries [][2][]byte
	var chunk []byte
	for i := range 64 {
		p := bytes.Repeat([]byte{byte(i)}, 200+i)
		chunk = append(chunk, frameOf("cfilter", p)...)
		want = append(want, msg{"cfilter", p})
	}
	entries = append(entries, [2][]byte{chunk, nil})
	big := bytes.Repeat([]byte{0xbb}, 10_000)
	entries = append(entries, [2][]byte{frameOf("block", big), nil})
	want = append(want, msg{"block", big})
	split := bytes.Repeat([]byte{0x33}, 300)
	sf := frameOf("headers", split)
	entries = append(entries, [2][]byte{sf[:wireframe.HeaderSize+7], split[7:]})
	want = append(want, msg{"headers", split})
	entries = append(entries, [2][]byte{append(frameOf("sendheaders", nil), frameOf("cfilter", []byte{7})...), nil})
	want = append(want, msg{"sendheaders", nil}, msg{"cfilter", []byte{7}})

	errc := make(chan error, 1)
	go func() {
		for _, e := range entries {
			if _, err := link.Sink.Write(context.Background(), e[0], e[1]); err != nil {
				errc <- err
				return
			}
		}
		errc <- link.Sink.Flush()
	}()
	for i, w := range want {
		m, err := client.ReadMessage()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if m.Command != w.cmd || !bytes.Equal(m.Payload, w.payload) {
			t.Fatalf("message %d: %s of %d bytes, want %s of %d", i, m.Command, len(m.Payload), w.cmd, len(w.payload))
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestV2SinkAllocations: writing a chunk of 64 cfilters allocates nothing
// per message (a rekeying every 224 packets allocates new ciphers).
func TestV2SinkAllocations(t *testing.T) {
	link, dc, _ := v2Link(t, 64<<10)
	dc.discard.Store(true)
	var chunk []byte
	for range 64 {
		chunk = append(chunk, frameOf("cfilter", make([]byte, 200))...)
	}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := link.Sink.Write(ctx, chunk, nil); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Fatalf("%.1f allocations per chunk of 64 messages", allocs)
	}
}

// discardConn is a connection whose writes are dropped once discard is
// set (after the handshake).
type discardConn struct {
	net.Conn
	discard atomic.Bool
}

func (c *discardConn) Write(b []byte) (int, error) {
	if c.discard.Load() {
		return len(b), nil
	}
	return c.Conn.Write(b)
}
