package transport

import (
	"bufio"
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"golang.org/x/crypto/chacha20poly1305"

	"github.com/cfindexd/cfindexd/p2p/v2conn"
)

// BenchmarkSinkCFilters writes a send-queue entry of 64 cfilter frames
// (200 B payloads, as on cfbench's chain) through the server's v1 and v2
// sinks into a writer that drops the bytes, and seals the same 64 packet
// contents with a bare ChaCha20-Poly1305 (one nonce, no framing), all in
// the same loop. It reports each per filter: v2 minus v1 minus the bare
// AEAD is the server's per-message overhead of v2 that is not the cipher.
func BenchmarkSinkCFilters(b *testing.B) {
	const batch, size = 64, 200
	magic := chaincfg.RegressionNetParams.Net
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(i)
	}
	frame := frameOf("cfilter", payload)
	var entry []byte
	for range batch {
		entry = append(entry, frame...)
	}

	v1 := v1Sink{bw: bufio.NewWriterSize(io.Discard, 64<<10)}
	v2 := v2SinkToDiscard(b, magic)
	aead, err := chacha20poly1305.New(make([]byte, chacha20poly1305.KeySize))
	if err != nil {
		b.Fatal(err)
	}
	nonce := make([]byte, chacha20poly1305.NonceSize)
	plain := make([]byte, 2+size, 2+size+aead.Overhead())

	ctx := context.Background()
	var v1Time, v2Time, aeadTime time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		if _, err := v1.Write(ctx, entry, nil); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := v2.Write(ctx, entry, nil); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		for range batch {
			aead.Seal(plain[:0], nonce, plain, nil)
		}
		t3 := time.Now()
		v1Time += t1.Sub(start)
		v2Time += t2.Sub(t1)
		aeadTime += t3.Sub(t2)
	}
	filters := float64(batch * b.N)
	b.ReportMetric(float64(v1Time.Nanoseconds())/filters, "v1_ns/filter")
	b.ReportMetric(float64(v2Time.Nanoseconds())/filters, "v2_ns/filter")
	b.ReportMetric(float64(aeadTime.Nanoseconds())/filters, "aead_ns/filter")
	b.ReportMetric(float64((v2Time-v1Time-aeadTime).Nanoseconds())/filters, "overhead_ns/filter")
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

// v2SinkToDiscard runs the v2 handshake over loopback TCP, the server's
// end through Establish, and returns the server's sink with its socket
// writes dropped.
func v2SinkToDiscard(tb testing.TB, magic wire.BitcoinNet) Sink {
	tb.Helper()
	server, client := tcpPair(tb)
	dc := &discardConn{Conn: server}
	o := Options{
		Net:               magic,
		HandshakeDeadline: time.Now().Add(time.Minute),
		WriteTimeout:      time.Minute,
		ReadBuffer:        64 << 10,
		WriteBuffer:       64 << 10,
		Now:               time.Now,
	}
	done := make(chan error, 1)
	go func() {
		_, err := v2conn.Initiate(context.Background(), client, v2conn.DefaultConfig(magic))
		done <- err
	}()
	link, err := Establish(context.Background(), dc, o, V1(dc, o))
	if err != nil {
		tb.Fatal(err)
	}
	if err := <-done; err != nil {
		tb.Fatal(err)
	}
	if link.Transport != v2conn.V2 {
		tb.Fatalf("transport %v", link.Transport)
	}
	dc.discard.Store(true)
	return link.Sink
}

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(tb testing.TB) (server, client net.Conn) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		tb.Fatal("accept failed")
	}
	tb.Cleanup(func() { client.Close(); server.Close() })
	return server, client
}
