package v2conn

import (
	"bufio"
	"fmt"
	"io"
	"sync/atomic"
)

// Conn is an established v2 connection, either side. One goroutine may
// read (ReadMessage) while another writes (WriteMessage); reads must not
// be concurrent with each other, nor writes. Deadlines are the caller's,
// set on the underlying connection as for v1.
type Conn struct {
	rd         packetReader
	wr         packetWriter
	maxPayload int
	maxDecoys  int
	sessionID  [32]byte
	stats      counters
	// sent is the writer's last message type, reused while the command
	// does not change (a chunk of cfilters).
	sent sentType
}

// sentType is a command and its encoded message type (n bytes of typ; n
// is 0 until a command is encoded).
type sentType struct {
	command string
	typ     [longTypeSize]byte
	n       int
}

// newConn returns a connection reading packets from r and writing them to
// w with s's keys; cfg has its defaults.
func newConn(r *bufio.Reader, w io.Writer, s session, cfg Config) *Conn {
	return &Conn{
		rd:         packetReader{r: r, dir: s.recv, maxContents: cfg.MaxPayload + longTypeSize, budget: cfg.RecvBudget},
		wr:         packetWriter{w: w, dir: s.send},
		maxPayload: cfg.MaxPayload,
		maxDecoys:  cfg.MaxDecoyBytes,
		sessionID:  s.id,
	}
}

// counters are a connection's totals, read by metrics from any goroutine.
type counters struct {
	garbage      atomic.Int64
	decoys       atomic.Int64
	decoyBytes   atomic.Int64
	messages     atomic.Int64
	messageBytes atomic.Int64
}

// Stats are a connection's totals so far.
type Stats struct {
	// GarbageBytes is the garbage the initiator sent before its terminator.
	GarbageBytes int64
	// DecoyPackets and DecoyBytes count the decoys read and ignored (bytes
	// on the wire).
	DecoyPackets, DecoyBytes int64
	// Messages and MessageBytes count the messages read (the version packet
	// included; bytes on the wire).
	Messages, MessageBytes int64
}

// Stats returns the connection's totals so far; safe from any goroutine.
func (c *Conn) Stats() Stats {
	return Stats{
		GarbageBytes: c.stats.garbage.Load(),
		DecoyPackets: c.stats.decoys.Load(),
		DecoyBytes:   c.stats.decoyBytes.Load(),
		Messages:     c.stats.messages.Load(),
		MessageBytes: c.stats.messageBytes.Load(),
	}
}

// SessionID returns BIP-324's session ID: the same on both ends of an
// unintercepted connection.
func (c *Conn) SessionID() [32]byte { return c.sessionID }

// Message is one message read off a v2 connection.
type Message struct {
	// Command is the message's command ("" when Undecodable).
	Command string
	// Payload is the message's payload, the bytes a v1 frame would carry
	// after its header. From ReadMessage it is the caller's (nothing
	// reuses it); from ReadTransient it is valid until the next read.
	Payload []byte
	// WireSize is the packet's bytes on the wire; decoys read before it
	// are not counted.
	WireSize int
	// Undecodable: the packet was authentic but its message type was not
	// (an unassigned short ID, a malformed long command). Core drops such a
	// message and keeps the peer.
	Undecodable bool
	// Release returns the receive budget the message holds; call it once
	// the message has been handled. Never nil.
	Release func()
}

func noRelease() {}

// ReadMessage reads the next message, skipping decoy packets. Every
// packet's declared length is checked against the cap (Config.MaxPayload
// and the message type) and the receive budget before anything is read or
// allocated for it; a buffer grows with the bytes received. Decoys between
// two messages may total Config.MaxDecoyBytes on the wire; they count
// against whatever deadline the caller set, as the message they precede.
//
// An error means the connection cannot be read further. Errors that mean
// the peer broke the protocol wrap ErrMisbehaving.
func (c *Conn) ReadMessage() (Message, error) {
	return c.readMessage(false)
}

// ReadTransient is ReadMessage reading into the connection's own buffer,
// reused from one read to the next: the message's Payload is valid only
// until the next read, and the buffer keeps the size of the largest
// message read. For a client that decodes or compares each message before
// reading the next, it saves an allocation per message.
func (c *Conn) ReadTransient() (Message, error) {
	return c.readMessage(true)
}

func (c *Conn) readMessage(transient bool) (Message, error) {
	p, err := c.nextMessage(nil, transient)
	if err != nil {
		return Message{Release: noRelease}, err
	}
	m := Message{WireSize: p.wireSize, Release: noRelease}
	cmd, payload, ok := DecodeType(p.contents)
	if !ok {
		c.rd.release(p.held)
		m.Undecodable = true
		return m, nil
	}
	if len(payload) > c.maxPayload {
		c.rd.release(p.held)
		return Message{Release: noRelease}, fmt.Errorf("%w: %s payload of %d bytes, cap %d", ErrPacketTooLarge, cmd, len(payload), c.maxPayload)
	}
	m.Command, m.Payload = cmd, payload
	if held := p.held; held > 0 {
		var once atomic.Bool
		m.Release = func() {
			if once.CompareAndSwap(false, true) {
				c.rd.release(held)
			}
		}
	}
	return m, nil
}

// WriteMessage sends one message: command (a short ID where BIP-324 has
// one, else the 12-byte long form) and the concatenation of payload. It
// returns the bytes written on the wire. Nothing is sent for a malformed
// command (ErrBadCommand) or a payload over Config.MaxPayload
// (ErrMessageTooLarge).
func (c *Conn) WriteMessage(command string, payload ...[]byte) (int, error) {
	typ, err := c.messageType(command, payload)
	if err != nil {
		return 0, fmt.Errorf("write %w", err)
	}
	n, err := c.wr.write(false, typ, payload)
	if err != nil {
		return n, fmt.Errorf("write %s: %w", command, err)
	}
	return n, nil
}

// AppendMessage seals one message as WriteMessage does but appends the
// packet to dst instead of writing it, so that a server can gather many
// messages into one write (its send queue's chunks). Each packet advances
// the ciphers: packets must reach the connection in the order they were
// sealed, none dropped, and not interleaved with WriteMessage's. Calls
// must not be concurrent with each other or with WriteMessage. Nothing is
// appended for a malformed command (ErrBadCommand) or a payload over
// Config.MaxPayload (ErrMessageTooLarge).
func (c *Conn) AppendMessage(dst []byte, command string, payload ...[]byte) ([]byte, error) {
	typ, err := c.messageType(command, payload)
	if err != nil {
		return dst, fmt.Errorf("seal %w", err)
	}
	out, err := c.wr.appendPacket(dst, nil, false, typ, payload)
	if err != nil {
		return out, fmt.Errorf("seal %s: %w", command, err)
	}
	return out, nil
}

// messageType returns command's message type, valid until the next call,
// after checking the command and the payload's size against the cap. The
// last command's type is kept for the next message.
func (c *Conn) messageType(command string, payload [][]byte) ([]byte, error) {
	if c.sent.n == 0 || command != c.sent.command {
		typ, ok := AppendType(c.sent.typ[:0], command)
		if !ok {
			return nil, fmt.Errorf("%q: %w", command, ErrBadCommand)
		}
		c.sent.command, c.sent.n = command, len(typ)
	}
	size := 0
	for _, p := range payload {
		size += len(p)
	}
	if size > c.maxPayload {
		return nil, fmt.Errorf("%s of %d bytes: %w (cap %d)", command, size, ErrMessageTooLarge, c.maxPayload)
	}
	return c.sent.typ[:c.sent.n], nil
}

// nextMessage reads packets until one is not a decoy; aad is the first
// packet's associated data. Decoys are counted and bounded: at most
// maxDecoys bytes of them before the message.
func (c *Conn) nextMessage(aad []byte, transient bool) (packet, error) {
	decoyRun := 0
	for {
		p, err := c.rd.next(aad, transient)
		if err != nil {
			return packet{}, err
		}
		aad = nil
		if !p.decoy {
			c.stats.messages.Add(1)
			c.stats.messageBytes.Add(int64(p.wireSize))
			return p, nil
		}
		c.rd.release(p.held)
		c.stats.decoys.Add(1)
		c.stats.decoyBytes.Add(int64(p.wireSize))
		decoyRun += p.wireSize
		if decoyRun > c.maxDecoys {
			return packet{}, fmt.Errorf("%w: %d bytes since the last message", ErrDecoyFlood, decoyRun)
		}
	}
}
