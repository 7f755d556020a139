package corefixture

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// maxSubscriberFrame bounds frames read from a subscriber (subscriptions
// and READY are tiny).
const maxSubscriberFrame = 64 << 10

// writeTimeout bounds one Publish to one subscriber.
const writeTimeout = 5 * time.Second

// Publisher is a minimal ZMTP 3.0 PUB socket over TCP with the NULL
// security mechanism — enough to stand in for bitcoind's
// -zmqpub... endpoints in tests. It accepts any number of subscribers,
// honours their (prefix) subscriptions, both as ZMTP 3.0 data frames
// (0x01 + topic) and as ZMTP 3.1 SUBSCRIBE commands, and publishes
// multipart messages to the matching ones.
type Publisher struct {
	ln net.Listener

	mu      sync.Mutex
	subs    map[*subscriber]struct{}
	changed chan struct{} // closed and replaced whenever subscriptions change
	closed  bool
	wg      sync.WaitGroup
}

type subscriber struct {
	conn   net.Conn
	wmu    sync.Mutex
	topics []string // guarded by Publisher.mu
}

// NewPublisher listens on 127.0.0.1:0; tb.Cleanup closes it.
func NewPublisher(tb testing.TB) *Publisher {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Publisher{ln: ln, subs: make(map[*subscriber]struct{}), changed: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.Close)
	return p
}

// Endpoint returns "tcp://127.0.0.1:<port>".
func (p *Publisher) Endpoint() string { return "tcp://" + p.ln.Addr().String() }

// Close stops listening and disconnects every subscriber.
func (p *Publisher) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	for s := range p.subs {
		_ = s.conn.Close()
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	p.wg.Wait()
}

// DisconnectAll drops every current subscriber connection (the listener
// stays up), as a publisher restart would. When it returns, the dropped
// subscribers no longer count for WaitSubscribed.
func (p *Publisher) DisconnectAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for s := range p.subs {
		_ = s.conn.Close()
		delete(p.subs, s)
	}
	p.notifyLocked()
}

// WaitSubscribed blocks until at least n connected subscribers have a
// subscription matching topic, or ctx is done.
func (p *Publisher) WaitSubscribed(ctx context.Context, topic string, n int) error {
	for {
		p.mu.Lock()
		count := 0
		for s := range p.subs {
			if s.matches(topic) {
				count++
			}
		}
		ch := p.changed
		p.mu.Unlock()
		if count >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d subscribers of %q (have %d): %w", n, topic, count, ctx.Err())
		}
	}
}

// Publish sends a multipart message to every subscriber whose
// subscription is a prefix of the first frame. It returns how many
// subscribers it was written to.
func (p *Publisher) Publish(parts ...[]byte) (int, error) {
	if len(parts) == 0 {
		return 0, errors.New("empty message")
	}
	p.mu.Lock()
	var targets []*subscriber
	for s := range p.subs {
		if s.matches(string(parts[0])) {
			targets = append(targets, s)
		}
	}
	p.mu.Unlock()
	sent := 0
	var firstErr error
	for _, s := range targets {
		if err := s.writeMessage(parts); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		sent++
	}
	return sent, firstErr
}

func (p *Publisher) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *Publisher) accept() {
	defer p.wg.Done()
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serve(conn)
		}()
	}
}

func (p *Publisher) serve(conn net.Conn) {
	defer conn.Close()
	s := &subscriber{conn: conn}
	r := bufio.NewReader(conn)
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if err := s.handshake(r); err != nil {
		return
	}
	_ = conn.SetDeadline(time.Time{})

	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.subs[s] = struct{}{}
	p.notifyLocked()
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.subs, s)
		p.notifyLocked()
		p.mu.Unlock()
	}()

	for {
		flags, body, err := readFrame(r)
		if err != nil {
			return
		}
		var topic string
		var sub bool
		switch {
		case flags&flagCommand != 0:
			name, data, ok := parseCommand(body)
			if !ok {
				return
			}
			switch name {
			case "SUBSCRIBE":
				topic, sub = string(data), true
			case "CANCEL":
				topic = string(data)
			default:
				continue
			}
		case len(body) > 0 && (body[0] == 1 || body[0] == 0):
			topic, sub = string(body[1:]), body[0] == 1
		default:
			continue // PUB ignores other data from subscribers
		}
		p.mu.Lock()
		if sub {
			s.topics = append(s.topics, topic)
		} else {
			for i, t := range s.topics {
				if t == topic {
					s.topics = append(s.topics[:i], s.topics[i+1:]...)
					break
				}
			}
		}
		p.notifyLocked()
		p.mu.Unlock()
	}
}

func (s *subscriber) matches(topic string) bool {
	for _, t := range s.topics {
		if strings.HasPrefix(topic, t) {
			return true
		}
	}
	return false
}

// ZMTP 3.0 frame flags.
const (
	flagMore    = 0x01
	flagLong    = 0x02
	flagCommand = 0x04
)

// greeting is the 64-byte ZMTP 3.0 greeting: signature, version 3.0,
// mechanism "NULL", as-server 0, filler.
func greeting() []byte {
	g := make([]byte, 64)
	g[0], g[9] = 0xff, 0x7f
	g[10], g[11] = 3, 0
	copy(g[12:32], "NULL")
	return g
}

func (s *subscriber) handshake(r *bufio.Reader) error {
	if _, err := s.conn.Write(greeting()); err != nil {
		return err
	}
	peer := make([]byte, 64)
	if _, err := io.ReadFull(r, peer); err != nil {
		return err
	}
	if peer[0] != 0xff || peer[9] != 0x7f || peer[10] < 3 || !strings.HasPrefix(string(peer[12:32]), "NULL\x00") {
		return errors.New("bad ZMTP greeting")
	}
	// READY with Socket-Type=PUB.
	var ready []byte
	ready = append(ready, 5)
	ready = append(ready, "READY"...)
	ready = append(ready, byte(len("Socket-Type")))
	ready = append(ready, "Socket-Type"...)
	ready = binary.BigEndian.AppendUint32(ready, 3)
	ready = append(ready, "PUB"...)
	if err := writeFrame(s.conn, flagCommand, ready); err != nil {
		return err
	}
	flags, body, err := readFrame(r)
	if err != nil {
		return err
	}
	if name, _, ok := parseCommand(body); flags&flagCommand == 0 || !ok || name != "READY" {
		return errors.New("expected READY")
	}
	return nil
}

func (s *subscriber) writeMessage(parts [][]byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_ = s.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	var buf []byte
	for i, part := range parts {
		flags := byte(0)
		if i < len(parts)-1 {
			flags = flagMore
		}
		buf = appendFrame(buf, flags, part)
	}
	_, err := s.conn.Write(buf)
	return err
}

func appendFrame(buf []byte, flags byte, body []byte) []byte {
	if len(body) > 255 {
		buf = append(buf, flags|flagLong)
		buf = binary.BigEndian.AppendUint64(buf, uint64(len(body)))
	} else {
		buf = append(buf, flags, byte(len(body)))
	}
	return append(buf, body...)
}

func writeFrame(w io.Writer, flags byte, body []byte) error {
	_, err := w.Write(appendFrame(nil, flags, body))
	return err
}

func readFrame(r *bufio.Reader) (byte, []byte, error) {
	flags, err := r.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	var size uint64
	if flags&flagLong != 0 {
		var b [8]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, nil, err
		}
		size = binary.BigEndian.Uint64(b[:])
	} else {
		b, err := r.ReadByte()
		if err != nil {
			return 0, nil, err
		}
		size = uint64(b)
	}
	if size > maxSubscriberFrame {
		return 0, nil, fmt.Errorf("frame of %d bytes", size)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	return flags, body, nil
}

func parseCommand(body []byte) (name string, data []byte, ok bool) {
	if len(body) < 1 || int(body[0]) > len(body)-1 {
		return "", nil, false
	}
	n := int(body[0])
	return string(body[1 : 1+n]), body[1+n:], true
}
