package transport

import (
	"bufio"
	"context"
	"io"
	"testing"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
)

// BenchmarkSinkCFilters writes a send-queue entry of 64 cfilter frames
// (200 B payloads, as on cfbench's chain) through the server's v1 and v2
// sinks into a writer that drops the bytes, and seals the same 64 packet
// contents with a bare ChaCha20-Poly1305 (one nonce, no framing), all in
// the same loop. It reports each per filter: v2 minus v1 minus the bare
// AEAD is the server's per-message overhead of v2 that is not the cipher.
func BenchmarkSinkCFilters(b *testing.B) {
	const batch, size = 64, 200
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
	link, dc, _ := v2Link(b, 64<<10)
	dc.discard.Store(true)
	v2 := link.Sink
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
