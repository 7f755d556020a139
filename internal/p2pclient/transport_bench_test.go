package p2pclient

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/tcptest"
	"github.com/cfindexd/cfindexd/p2p/v2conn"
)

// BenchmarkFiltersOverV2VersusV1 streams cfilter messages (200 B, as on
// cfbench's chain, and 20 kB, as on mainnet) over loopback TCP to a client
// reading them with ReadRaw, in batches of 64 written at once as cfindexd
// gathers frames into chunks: over v1 the frames as stored (checksum and
// all, no hashing, as cfindexd writes them), over v2 each message sealed
// into the batch (v2conn's AppendMessage). The two alternate within the
// same loop; it reports both rates and their ratio (v2/v1): the framing
// and cipher cost of serving filters over v2, both ends on one machine.
func BenchmarkFiltersOverV2VersusV1(b *testing.B) {
	for _, size := range []int{200, 20_000} {
		b.Run(fmt.Sprint(size, "B"), func(b *testing.B) { benchFiltersOverV2VersusV1(b, size) })
	}
}

func benchFiltersOverV2VersusV1(b *testing.B, size int) {
	const batch = 64
	msg := wire.NewMsgCFilter(wire.GCSFilterRegular, &chainhash.Hash{1}, bytes.Repeat([]byte{0x5a}, size))
	var framed bytes.Buffer
	if _, err := wire.WriteMessageWithEncodingN(&framed, msg, wire.ProtocolVersion, testMagic, wire.BaseEncoding); err != nil {
		b.Fatal(err)
	}
	frame := framed.Bytes()
	payload := frame[headerSize:]

	// The v1 pair: a raw server socket and a client Conn.
	v1Server, v1Client := tcptest.Pair(b)
	v1 := NewConn(v1Client, testMagic, ConnOptions{})
	frames := bytes.Repeat(frame, batch)
	v1Send := serveBatches(func() error { _, err := v1Server.Write(frames); return err })

	// The v2 pair, through the handshake.
	v2Server, v2Client := tcptest.Pair(b)
	accepted := make(chan *v2conn.Conn, 1)
	go func() {
		_, first, err := v2conn.Detect(v2Server, testMagic, time.Now().Add(time.Minute))
		if err != nil {
			close(accepted)
			return
		}
		c, err := v2conn.Accept(context.Background(), v2Server, first, v2conn.DefaultConfig(testMagic))
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	v2 := &Conn{nc: v2Client, net: testMagic, pver: wire.ProtocolVersion}
	v2.counted = &countingConn{Conn: v2Client, c: v2}
	ini, err := v2conn.Initiate(context.Background(), v2.counted, v2Config(testMagic, ConnOptions{Timeout: time.Minute}))
	if err != nil {
		b.Fatal(err)
	}
	v2.v2 = ini
	srv, ok := <-accepted
	if !ok {
		b.Fatal("accept failed")
	}
	var packets []byte
	v2Send := serveBatches(func() error {
		packets = packets[:0]
		for range batch {
			if packets, err = srv.AppendMessage(packets, wire.CmdCFilter, payload); err != nil {
				return err
			}
		}
		_, err := v2Server.Write(packets)
		return err
	})

	read := func(c *Conn, send chan<- int) {
		send <- 1
		for range batch {
			f, err := c.ReadRaw(wire.MaxMessagePayload)
			if err != nil || len(f.Payload) != len(payload) {
				b.Fatalf("read: %v", err)
			}
		}
	}
	var v1Time, v2Time time.Duration
	b.SetBytes(2 * batch * int64(len(payload)))
	for b.Loop() {
		start := time.Now()
		read(v1, v1Send)
		mid := time.Now()
		read(v2, v2Send)
		v2Time += time.Since(mid)
		v1Time += mid.Sub(start)
	}
	close(v1Send)
	close(v2Send)
	filters := float64(batch * b.N)
	b.ReportMetric(filters/v1Time.Seconds(), "v1_filters/s")
	b.ReportMetric(filters/v2Time.Seconds(), "v2_filters/s")
	b.ReportMetric(v1Time.Seconds()/v2Time.Seconds(), "v2/v1")
}

// serveBatches runs send (one batch) as many times as each number
// received asks.
func serveBatches(send func() error) chan<- int {
	ch := make(chan int)
	go func() {
		for n := range ch {
			for range n {
				if send() != nil {
					return
				}
			}
		}
	}()
	return ch
}
