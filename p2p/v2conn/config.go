package v2conn

import (
	"fmt"
	"time"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/wireframe"
)

// Protocol sizes (BIP-324).
const (
	// MaxGarbage is the most garbage an initiator may send between its key
	// and its garbage terminator.
	MaxGarbage = 4095
	// TerminatorSize is the length of a garbage terminator.
	TerminatorSize = 16
	// KeySize is the length of an ElligatorSwift-encoded public key.
	KeySize = 64
	// LengthSize is the length of a packet's encrypted length field.
	LengthSize = 3
	// headerSize is the packet header inside the encryption: one byte whose
	// top bit marks a decoy.
	headerSize = 1
	// tagSize is the Poly1305 tag after each packet.
	tagSize = 16
	// PacketOverhead is what a packet adds to its contents on the wire.
	PacketOverhead = LengthSize + headerSize + tagSize
	// maxLength is the largest contents length 3 bytes can declare.
	maxLength = 1<<24 - 1
)

// Defaults of Config.
const (
	// DefaultHandshakeTimeout bounds the whole handshake: keys, garbage,
	// terminator and version packet (Core's -peertimeout is 60 s).
	DefaultHandshakeTimeout = 60 * time.Second
	// DefaultMaxDecoyBytes is how many bytes of decoy packets may arrive
	// between two messages: as much as the largest message.
	DefaultMaxDecoyBytes = wireframe.MaxPayload + longTypeSize + PacketOverhead
)

// Budget is a count of bytes the caller lends out. *semaphore.Weighted (of
// golang.org/x/sync) is one.
type Budget interface {
	// TryAcquire takes n bytes if they are free and reports whether it did.
	TryAcquire(n int64) bool
	// Release returns n bytes taken earlier.
	Release(n int64)
}

// HandshakeAdmission gates the CPU-bound steps of a handshake (creating
// our key; the ECDH with the initiator's) so that a flood of handshakes
// cannot starve served peers. Acquire may refuse with an error, which
// Accept returns; release is called when the step is done, never across
// network I/O. btcd's v2transport.HandshakeAdmission has the same method.
type HandshakeAdmission interface {
	Acquire() (release func(), err error)
}

// Config is what Accept and Initiate need to know of the network and of
// the limits. The zero value of every field but Net is usable; DefaultConfig
// fills in the defaults Core uses.
type Config struct {
	// Net is the network whose magic tells v1 from v2 and salts the
	// session keys.
	Net wire.BitcoinNet
	// HandshakeTimeout bounds Accept and Initiate; zero means no deadline
	// of their own (the caller's deadline on the connection still holds).
	HandshakeTimeout time.Duration
	// MaxPayload caps the payload of one received message (and of one sent
	// message), checked against a packet's declared length before anything
	// is read or allocated for it. Zero means wireframe.MaxPayload, Core's
	// MAX_PROTOCOL_MESSAGE_LENGTH; at most what 3 bytes can declare.
	MaxPayload int
	// RecvBudget, if set, lends the bytes of each packet while it is read
	// and, for a message, until its Release: a packet the budget cannot
	// cover fails with ErrOverBudget before it is read.
	RecvBudget Budget
	// MaxDecoyBytes caps the decoy packets (their bytes on the wire) read
	// between two messages, and before the version packet; zero means
	// DefaultMaxDecoyBytes.
	MaxDecoyBytes int
	// MaxGarbage is the most garbage we send after our key: each
	// connection sends a uniformly random length from 0 to MaxGarbage, as
	// Core does, so that the handshake has no fixed size. Zero sends none.
	MaxGarbage int
	// Admission, if set, gates the handshake's CPU-bound steps.
	Admission HandshakeAdmission
}

// DefaultConfig returns the configuration for net with Core's defaults.
func DefaultConfig(net wire.BitcoinNet) Config {
	return Config{
		Net:              net,
		HandshakeTimeout: DefaultHandshakeTimeout,
		MaxPayload:       wireframe.MaxPayload,
		MaxDecoyBytes:    DefaultMaxDecoyBytes,
		MaxGarbage:       MaxGarbage,
	}
}

// withDefaults checks c and fills in its zero fields.
func (c Config) withDefaults() (Config, error) {
	if c.MaxPayload == 0 {
		c.MaxPayload = wireframe.MaxPayload
	}
	if c.MaxPayload < 0 || c.MaxPayload > maxLength-longTypeSize {
		return c, fmt.Errorf("v2 config: MaxPayload %d outside 0..%d", c.MaxPayload, maxLength-longTypeSize)
	}
	if c.MaxDecoyBytes == 0 {
		c.MaxDecoyBytes = DefaultMaxDecoyBytes
	}
	if c.MaxDecoyBytes < 0 {
		return c, fmt.Errorf("v2 config: MaxDecoyBytes %d is negative", c.MaxDecoyBytes)
	}
	if c.MaxGarbage < 0 || c.MaxGarbage > MaxGarbage {
		return c, fmt.Errorf("v2 config: MaxGarbage %d outside 0..%d", c.MaxGarbage, MaxGarbage)
	}
	if c.HandshakeTimeout < 0 {
		return c, fmt.Errorf("v2 config: HandshakeTimeout %v is negative", c.HandshakeTimeout)
	}
	return c, nil
}
