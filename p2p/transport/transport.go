package transport

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/btcsuite/btcd/wire/v2"
	"golang.org/x/sync/semaphore"

	"github.com/cfindexd/cfindexd/p2p/msgread"
	"github.com/cfindexd/cfindexd/p2p/v2conn"
)

// Source reads a peer's messages one at a time, as msgread.Reader does.
type Source interface {
	Next(st msgread.State) (msgread.Frame, error)
}

// Sink writes a peer's queued entries. Write takes frame followed by
// payload (payload may be nil): complete v1 frames back to back, a
// payload possibly held apart from its header. It returns the bytes the
// entry took on the wire. Flush sends what is buffered. One goroutine
// writes.
type Sink interface {
	Write(ctx context.Context, frame, payload []byte) (int, error)
	Flush() error
}

// Options are what Establish needs of the server.
type Options struct {
	// Net is the network: its magic tells v1 from v2 and salts v2's keys.
	Net wire.BitcoinNet
	// HandshakeDeadline ends detection and the v2 handshake.
	HandshakeDeadline time.Time
	// WriteTimeout bounds each write to the socket.
	WriteTimeout time.Duration
	// ReadBuffer and WriteBuffer size the v1 reader's and the writer's
	// buffers.
	ReadBuffer, WriteBuffer int
	// Recv is the server-wide receive budget of large messages; MinRate
	// (bytes a second) the rate below which a large message's sender is
	// cut off; Now the clock.
	Recv    *semaphore.Weighted
	MinRate int64
	Now     func() time.Time
	// Seal is the server-wide budget of bytes held by v2 messages over
	// MaxSmallFrame being encrypted and written (twice their size each).
	Seal *semaphore.Weighted
	// Admission gates the v2 handshake's curve steps (nil: none).
	Admission v2conn.HandshakeAdmission
}

// Link is an established connection.
type Link struct {
	Transport v2conn.Transport
	Source    Source
	Sink      Sink
	// V2 is the v2 connection (nil for v1): its statistics.
	V2 *v2conn.Conn
	// v1 and bw are a v1 link's reader and buffered writer.
	v1 *msgread.Reader
	bw *bufio.Writer
}

// V1 returns the v1 link of conn, what every connection starts as: frames
// read by a msgread.Reader, written through a buffered writer. Without
// Options.V2 it is the connection's link for good.
func V1(conn net.Conn, o Options) Link {
	bw := bufio.NewWriterSize(deadlineWriter{conn: conn, timeout: o.WriteTimeout}, o.WriteBuffer)
	r := &msgread.Reader{
		R:           bufio.NewReaderSize(conn, o.ReadBuffer),
		SetDeadline: conn.SetReadDeadline,
		Net:         o.Net,
		Recv:        o.Recv,
		MinRate:     o.MinRate,
		Now:         o.Now,
	}
	return Link{Transport: v2conn.V1, Source: r, Sink: v1Sink{bw: bw}, v1: r, bw: bw}
}

// Establish tells the transport of conn, whose link is still v1's (from
// V1), by its first bytes: for v1 it returns v1 with those bytes replayed
// in front of its reader; for v2 it runs the responder's handshake and
// returns the v2 link, which keeps v1's write buffer. Errors wrap what
// failed; a v2 handshake fault wraps v2conn.ErrMisbehaving (not msgread's:
// nothing was served yet, and Core only disconnects). On failure the
// caller closes conn.
func Establish(ctx context.Context, conn net.Conn, o Options, v1 Link) (Link, error) {
	if v1.v1 == nil || v1.bw == nil {
		return Link{}, errNotV1
	}
	tr, first, err := v2conn.Detect(conn, o.Net, o.HandshakeDeadline)
	if err != nil {
		return Link{}, err
	}
	if tr == v2conn.V1 {
		v1.v1.R.Reset(io.MultiReader(bytes.NewReader(first), conn))
		return v1, nil
	}
	cork := &corkConn{Conn: conn}
	cfg := v2conn.DefaultConfig(o.Net)
	cfg.HandshakeTimeout = time.Until(o.HandshakeDeadline)
	if cfg.HandshakeTimeout <= 0 {
		return Link{}, fmt.Errorf("v2 handshake: %w", os.ErrDeadlineExceeded)
	}
	rb := &recvBudget{shared: o.Recv, conn: conn, minRate: o.MinRate, now: o.Now}
	cfg.RecvBudget = rb
	cfg.Admission = o.Admission
	c, err := v2conn.Accept(ctx, cork, first, cfg)
	if err != nil {
		return Link{}, err
	}
	cork.bw = v1.bw
	return Link{
		Transport: v2conn.V2,
		Source:    &v2Source{c: c, conn: conn, budget: rb},
		Sink:      &v2Sink{c: c, bw: v1.bw, seal: o.Seal},
		V2:        c,
	}, nil
}

// v1Sink copies frames into the buffered writer.
type v1Sink struct{ bw *bufio.Writer }

func (s v1Sink) Write(_ context.Context, frame, payload []byte) (int, error) {
	n, err := s.bw.Write(frame)
	if err == nil && payload != nil {
		var m int
		m, err = s.bw.Write(payload)
		n += m
	}
	return n, err
}

func (s v1Sink) Flush() error { return s.bw.Flush() }

// deadlineWriter is the connection as a buffered writer sees it: every
// write to the socket (a full buffer, a flush, or a write larger than the
// buffer) gets its own deadline, timeout from when it starts.
type deadlineWriter struct {
	conn    net.Conn
	timeout time.Duration
}

func (w deadlineWriter) Write(b []byte) (int, error) {
	if err := w.conn.SetWriteDeadline(time.Now().Add(w.timeout)); err != nil {
		return 0, err
	}
	return w.conn.Write(b)
}
