package wireframe

import (
	"bytes"
	"encoding/binary"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

const (
	// HeaderSize is the length of a P2P v1 message header.
	HeaderSize = 24
	// CommandSize is the length of the NUL-padded command in a header.
	CommandSize = 12
	// ChecksumSize is the length of a message checksum.
	ChecksumSize = 4
	// MaxPayload is Bitcoin Core's MAX_PROTOCOL_MESSAGE_LENGTH: the
	// largest payload Core accepts in any message.
	MaxPayload = 4_000_000
)

// Checksum is a P2P message checksum: the first 4 bytes of dSHA256 of the
// payload.
type Checksum [ChecksumSize]byte

// PayloadChecksum returns the message checksum of payload.
func PayloadChecksum(payload []byte) Checksum {
	h := chainhash.DoubleHashH(payload)
	return Checksum{h[0], h[1], h[2], h[3]}
}

// Header is a decoded message header, the command aside.
type Header struct {
	Magic    wire.BitcoinNet
	Length   uint32
	Checksum Checksum
}

// PutHeader writes the header of a message of command (at most
// CommandSize bytes) whose payload is payloadLen bytes with checksum sum
// into dst (at least HeaderSize bytes).
func PutHeader(dst []byte, net wire.BitcoinNet, command string, payloadLen int, sum Checksum) {
	binary.LittleEndian.PutUint32(dst[0:4], uint32(net))
	clear(dst[4:16])
	copy(dst[4:16], command)
	binary.LittleEndian.PutUint32(dst[16:20], uint32(payloadLen))
	copy(dst[20:24], sum[:])
}

// CommandField returns b's command field as sent: CommandSize bytes,
// NUL padding included, unchecked. Comparing fields tells whether two
// headers carry the same command without decoding either.
func CommandField(b *[HeaderSize]byte) [CommandSize]byte {
	return [CommandSize]byte(b[4:16])
}

// PayloadLength returns the payload length b declares, unchecked.
func PayloadLength(b *[HeaderSize]byte) uint32 {
	return binary.LittleEndian.Uint32(b[16:20])
}

// DecodeHeader decodes b. command is b's command up to its first NUL (a
// slice of b); ok is false when the command is malformed: not printable
// ASCII followed only by NULs.
func DecodeHeader(b *[HeaderSize]byte) (h Header, command []byte, ok bool) {
	h = Header{
		Magic:  wire.BitcoinNet(binary.LittleEndian.Uint32(b[0:4])),
		Length: PayloadLength(b),
	}
	copy(h.Checksum[:], b[20:24])
	cmd := b[4:16]
	n := bytes.IndexByte(cmd, 0)
	if n < 0 {
		n = len(cmd)
	}
	for i, c := range cmd {
		if i < n && (c < 0x20 || c > 0x7e) || i >= n && c != 0 {
			return h, cmd, false
		}
	}
	return h, cmd[:n], true
}
