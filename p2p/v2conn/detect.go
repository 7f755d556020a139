package v2conn

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/btcsuite/btcd/wire/v2"
)

// Transport is the transport an inbound connection speaks.
type Transport int

const (
	// V1 is Bitcoin's plaintext transport: 24-byte headers with magic,
	// command, length and checksum.
	V1 Transport = iota + 1
	// V2 is BIP-324's encrypted transport.
	V2
)

func (t Transport) String() string {
	switch t {
	case V1:
		return "v1"
	case V2:
		return "v2"
	}
	return fmt.Sprintf("Transport(%d)", int(t))
}

// PrefixSize is how many bytes tell v1 from v2: the network magic and the
// command of a v1 version message's header.
const PrefixSize = 4 + CommandSize

// v1Prefix is the first PrefixSize bytes every v1 initiator sends: net's
// magic, then "version" padded with NULs (a v1 connection opens with a
// version message).
func v1Prefix(net wire.BitcoinNet) [PrefixSize]byte {
	var p [PrefixSize]byte
	binary.LittleEndian.PutUint32(p[:4], uint32(net))
	copy(p[4:], "version")
	return p
}

// DeadlineReader is the side of a connection Detect reads from.
type DeadlineReader interface {
	io.Reader
	SetReadDeadline(t time.Time) error
}

// Detect tells a v1 initiator from a v2 one by its first bytes, as Core
// does: a v1 peer's connection opens with net's magic followed by
// "version" and NUL padding; anything else is the start of a v2 initiator's
// ElligatorSwift key. Detect reads at most PrefixSize bytes, under
// deadline, and stops at the first byte that differs from the v1 prefix.
//
// first is every byte read, to be replayed: for V1, the first 16 bytes of
// the version message's header; for V2, the start of the key, which Accept
// takes. The read deadline is left as deadline.
func Detect(conn DeadlineReader, net wire.BitcoinNet, deadline time.Time) (t Transport, first []byte, err error) {
	if err := conn.SetReadDeadline(deadline); err != nil {
		return 0, nil, fmt.Errorf("detect transport: %w", err)
	}
	prefix := v1Prefix(net)
	buf := make([]byte, PrefixSize)
	have := 0
	for have < PrefixSize {
		n, err := conn.Read(buf[have:])
		have += n
		if !bytes.Equal(buf[:have], prefix[:have]) {
			return V2, buf[:have], nil
		}
		if err != nil && have < PrefixSize {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, buf[:have], fmt.Errorf("detect transport after %d bytes: %w", have, err)
		}
	}
	return V1, buf, nil
}
