package v2conn

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2/ellswift"
	"github.com/btcsuite/btcd/v2transport"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/wireframe"
)

// loopback is an in-memory stream: what is written is read back.
type loopback struct{ bytes.Buffer }

// v1RoundTrip frames a message as v1 does (header with checksum), then
// reads it back: header, payload, checksum check.
func v1RoundTrip(b *testing.B, buf *loopback, br *bufio.Reader, payload []byte, in []byte) []byte {
	var hdr [wireframe.HeaderSize]byte
	wireframe.PutHeader(hdr[:], wire.MainNet, "cfilter", len(payload), wireframe.PayloadChecksum(payload))
	buf.Write(hdr[:])
	buf.Write(payload)
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		b.Fatal(err)
	}
	h, _, _ := wireframe.DecodeHeader(&hdr)
	in = in[:h.Length]
	if _, err := io.ReadFull(br, in); err != nil {
		b.Fatal(err)
	}
	if wireframe.PayloadChecksum(in) != h.Checksum {
		b.Fatal("checksum")
	}
	return in
}

// BenchmarkTransportV2VersusV1 sends and reads back one message per
// operation over each transport in turn, in memory, and reports both
// throughputs and their ratio (v2/v1): the cost of encryption against v1's
// double SHA-256 checksum, measured in the same run. Both read into a
// reused buffer (v2's ReadTransient), as a client reading filters does.
func BenchmarkTransportV2VersusV1(b *testing.B) {
	for _, size := range []int{200, 20_000, 1_000_000} {
		b.Run(itoa(size)+"B", func(b *testing.B) {
			payload := make([]byte, size)
			for i := range payload {
				payload[i] = byte(i)
			}
			var v1buf loopback
			v1br := bufio.NewReaderSize(&v1buf, readBufferSize)
			v1in := make([]byte, size)

			ini, resp := sessionPair(b)
			var v2buf loopback
			sender := newConn(bufio.NewReader(bytes.NewReader(nil)), &v2buf, session{send: resp.send}, Config{MaxPayload: 4_000_000})
			receiver := newConn(bufio.NewReaderSize(&v2buf, readBufferSize), io.Discard, session{recv: ini.recv}, Config{MaxPayload: 4_000_000, MaxDecoyBytes: 1})

			var v1Time, v2Time time.Duration
			b.ReportAllocs()
			b.SetBytes(int64(2 * size))
			for b.Loop() {
				start := time.Now()
				v1RoundTrip(b, &v1buf, v1br, payload, v1in)
				mid := time.Now()
				if _, err := sender.WriteMessage("cfilter", payload); err != nil {
					b.Fatal(err)
				}
				m, err := receiver.ReadTransient()
				if err != nil || len(m.Payload) != size {
					b.Fatal(err)
				}
				v2Time += time.Since(mid)
				v1Time += mid.Sub(start)
			}
			mb := float64(size) * float64(b.N) / 1e6
			b.ReportMetric(mb/v1Time.Seconds(), "v1_MB/s")
			b.ReportMetric(mb/v2Time.Seconds(), "v2_MB/s")
			b.ReportMetric(v1Time.Seconds()/v2Time.Seconds(), "v2/v1")
		})
	}
}

// BenchmarkHandshake is the responder's whole handshake (key, ECDH, key
// derivation, garbage, version packet) against an in-memory initiator that
// does the same work, beside the bare ElligatorSwift work of both sides
// (two keys, two ECDHs) in the same run: the CPU a handshake flood costs
// per connection, and the share of it that is not the curve arithmetic.
func BenchmarkHandshake(b *testing.B) {
	var bare, full time.Duration
	for b.Loop() {
		start := time.Now()
		p1, k1, err1 := ellswift.EllswiftCreate()
		p2, k2, err2 := ellswift.EllswiftCreate()
		_, err3 := ellswift.V2Ecdh(p1, k2, k1, true)
		_, err4 := ellswift.V2Ecdh(p2, k1, k2, false)
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		si := newScriptedInitiator(b, nil)
		if _, err := handshake(si, nil, Config{Net: testNet, MaxPayload: 1000, MaxDecoyBytes: 1000}, false); err != nil {
			b.Fatal(err)
		}
		full += time.Since(mid)
		bare += mid.Sub(start)
	}
	b.ReportMetric(float64(full.Microseconds())/float64(b.N), "µs/handshake")
	b.ReportMetric(full.Seconds()/bare.Seconds(), "handshake/bare")
}

// BenchmarkCiphersVersusBTCD seals and opens one packet per operation with
// this package's in-place ciphers and with btcd's v2transport ciphers
// (fresh slices per call), the same keys and sizes, in the same loop, and
// reports the ratio (ours/btcd's throughput).
func BenchmarkCiphersVersusBTCD(b *testing.B) {
	for _, size := range []int{200, 20_000, 1_000_000} {
		b.Run(itoa(size)+"B", func(b *testing.B) {
			var key [keySize]byte
			ourSeal, _ := newPacketCipher(key)
			ourOpen, _ := newPacketCipher(key)
			ourLenS, _ := newLengthCipher(key)
			ourLenO, _ := newLengthCipher(key)
			theirSeal, _ := v2transport.NewFSChaCha20Poly1305(key[:])
			theirOpen, _ := v2transport.NewFSChaCha20Poly1305(key[:])
			theirLenS, _ := v2transport.NewFSChaCha20(key[:])
			theirLenO, _ := v2transport.NewFSChaCha20(key[:])
			payload := make([]byte, size)
			buf := make([]byte, 0, LengthSize+size+tagSize)
			var ours, theirs time.Duration
			b.ReportAllocs()
			b.SetBytes(int64(2 * size))
			for b.Loop() {
				start := time.Now()
				pkt := append(buf[:0], 0, 0, 0)
				pkt = append(pkt, payload...)
				_ = ourLenS.crypt(pkt[:LengthSize])
				ct, err := ourSeal.seal(pkt[LengthSize:], nil)
				if err != nil {
					b.Fatal(err)
				}
				_ = ourLenO.crypt(pkt[:LengthSize])
				if _, err := ourOpen.open(ct, nil); err != nil {
					b.Fatal(err)
				}
				mid := time.Now()
				l, _ := theirLenS.Crypt([]byte{0, 0, 0})
				ct2, err := theirSeal.Encrypt(nil, payload)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = theirLenO.Crypt(l)
				if _, err := theirOpen.Decrypt(nil, ct2); err != nil {
					b.Fatal(err)
				}
				theirs += time.Since(mid)
				ours += mid.Sub(start)
			}
			b.ReportMetric(theirs.Seconds()/ours.Seconds(), "ours/btcd")
		})
	}
}
