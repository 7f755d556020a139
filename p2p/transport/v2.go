package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/cfindexd/cfindexd/p2p/msgread"
	"github.com/cfindexd/cfindexd/p2p/v2conn"
	"github.com/cfindexd/cfindexd/wireframe"
)

// MaxSmallFrame is the largest payload a v2 packet carries without the
// server-wide budgets: a v1 frame's msgread.MaxSmallFrame.
const MaxSmallFrame = msgread.MaxSmallFrame

// smallPacket is a packet's bytes on the wire (length, header, a long
// message type, tag) around a payload of MaxSmallFrame.
const smallPacket = MaxSmallFrame + v2conn.PacketOverhead + 1 + v2conn.CommandSize

// v2Source reads a v2 connection's messages.
type v2Source struct {
	c      *v2conn.Conn
	conn   net.Conn
	budget *recvBudget
}

// Next reads one message under st's deadline and treats it as msgread
// treats a v1 frame. A message whose type is not decodable is ignored, as
// an unknown v1 command is.
func (s *v2Source) Next(st msgread.State) (msgread.Frame, error) {
	nop := func() {}
	if err := s.conn.SetReadDeadline(st.Deadline); err != nil {
		return msgread.Frame{Release: nop}, err
	}
	s.budget.frameDeadline = st.Deadline
	m, err := s.c.ReadMessage()
	if err != nil {
		if errors.Is(err, v2conn.ErrMisbehaving) {
			err = fmt.Errorf("%w: %w", msgread.ErrMisbehaving, err)
		}
		return msgread.Frame{Release: nop}, err
	}
	if m.Undecodable {
		m.Release()
		return msgread.Frame{Size: m.WireSize, Release: nop}, nil
	}
	f, err := msgread.FromPayload(m.Command, m.Payload, m.WireSize, st)
	if err != nil || f.Msg == nil {
		m.Release()
		return f, err
	}
	f.Release = m.Release
	return f, nil
}

// recvBudget is v2conn's receive budget for one connection: packets up to
// smallPacket are the peer's own (one at a time, as a v1 frame in its read
// buffer); a larger one takes its bytes from the server-wide budget and
// gets the read deadline a large v1 frame gets, LargeFrameGrace plus its
// size at the minimum rate, never past the frame's own deadline. Used by
// the reader's goroutine only.
type recvBudget struct {
	shared        *semaphore.Weighted
	conn          net.Conn
	minRate       int64
	now           func() time.Time
	frameDeadline time.Time
}

// TryAcquire implements v2conn.Budget.
func (b *recvBudget) TryAcquire(n int64) bool {
	if n <= smallPacket {
		return true
	}
	if b.shared != nil && !b.shared.TryAcquire(n) {
		return false
	}
	if b.minRate > 0 {
		d := b.now().Add(msgread.LargeFrameGrace + time.Duration(float64(n)/float64(b.minRate)*float64(time.Second)))
		if !b.frameDeadline.IsZero() && b.frameDeadline.Before(d) {
			d = b.frameDeadline
		}
		_ = b.conn.SetReadDeadline(d) // a failure shows on the read that follows
	}
	return true
}

// Release implements v2conn.Budget.
func (b *recvBudget) Release(n int64) {
	if n > smallPacket && b.shared != nil {
		b.shared.Release(n)
	}
}

// v2Sink writes queued frames as v2 packets.
type v2Sink struct {
	c    *v2conn.Conn
	bw   *bufio.Writer
	seal *semaphore.Weighted
	// command is the last command written, reused so that a chunk of
	// cfilters does not allocate a string per message.
	command string
}

// Write sends each frame of the entry as one packet: the header's command,
// the payload as it is (its pieces where it spans frame and payload).
func (s *v2Sink) Write(ctx context.Context, frame, payload []byte) (int, error) {
	total := 0
	err := eachFrame(frame, payload, func(cmd, first, second []byte) error {
		size := len(first) + len(second)
		if size > MaxSmallFrame && s.seal != nil {
			held := int64(2 * size)
			if err := s.seal.Acquire(ctx, held); err != nil {
				return fmt.Errorf("seal budget: %w", err)
			}
			defer s.seal.Release(held)
			// The copies are gone once the buffered writer has written the
			// packet out (a packet larger than the buffer bypasses it).
			defer func() { _ = s.bw.Flush() }()
		}
		if string(cmd) != s.command {
			s.command = string(cmd)
		}
		n, err := s.send(size, first, second)
		total += n
		return err
	})
	return total, err
}

// send sends one message of size bytes, first followed by second (nil
// unless the payload is split). A packet that fits the buffered writer is
// sealed in its free space (flushed first if need be), so the payload is
// copied once, into the packet; a larger one goes through WriteMessage,
// which hands it to the writer whole.
func (s *v2Sink) send(size int, first, second []byte) (int, error) {
	pieces := [2][]byte{first, second}
	k := 1
	if second != nil {
		k = 2
	}
	most := v2conn.PacketOverhead + 1 + v2conn.CommandSize + size
	if most > s.bw.Size() {
		return s.c.WriteMessage(s.command, pieces[:k]...)
	}
	if s.bw.Available() < most {
		if err := s.bw.Flush(); err != nil {
			return 0, fmt.Errorf("write %s: %w", s.command, err)
		}
	}
	pkt, err := s.c.AppendMessage(s.bw.AvailableBuffer(), s.command, pieces[:k]...)
	if err != nil {
		return 0, err
	}
	n, err := s.bw.Write(pkt)
	if err != nil {
		return n, fmt.Errorf("write %s: %w", s.command, err)
	}
	return n, nil
}

// Flush implements Sink.
func (s *v2Sink) Flush() error { return s.bw.Flush() }

// eachFrame calls fn with the command and payload of each v1 frame in
// frame followed by payload: the payload whole in first (second nil), or
// where it spans the two, its part in frame and its part in payload. A
// header never spans the two.
func eachFrame(frame, payload []byte, fn func(cmd, first, second []byte) error) error {
	rest, after := frame, payload
	// field and cmd are the last frame's command field and command: a
	// frame with the same field (a chunk of cfilters) is not decoded again.
	var field [wireframe.CommandSize]byte
	var cmd []byte
	for len(rest) > 0 || len(after) > 0 {
		if len(rest) == 0 {
			rest, after = after, nil
		}
		if len(rest) < wireframe.HeaderSize {
			return fmt.Errorf("%w: %d bytes of a header", errBadEntry, len(rest))
		}
		hdr := (*[wireframe.HeaderSize]byte)(rest)
		if cmd == nil || wireframe.CommandField(hdr) != field {
			_, c, ok := wireframe.DecodeHeader(hdr)
			if !ok {
				return fmt.Errorf("%w: malformed command %q", errBadEntry, c)
			}
			field, cmd = wireframe.CommandField(hdr), c
		}
		n := int(wireframe.PayloadLength(hdr))
		rest = rest[wireframe.HeaderSize:]
		var err error
		switch {
		case n <= len(rest):
			err = fn(cmd, rest[:n], nil)
			rest = rest[n:]
		case n <= len(rest)+len(after):
			split := n - len(rest)
			err = fn(cmd, rest, after[:split])
			rest, after = after[split:], nil
		default:
			return fmt.Errorf("%w: %s declares %d bytes, %d follow", errBadEntry, cmd, n, len(rest)+len(after))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// corkConn is the connection as v2conn sees it: writes go straight to the
// socket during the handshake, and through the peer's buffered writer (bw,
// set once the handshake is done) after it.
type corkConn struct {
	net.Conn
	bw *bufio.Writer
}

func (c *corkConn) Write(b []byte) (int, error) {
	if c.bw == nil {
		return c.Conn.Write(b)
	}
	return c.bw.Write(b)
}
