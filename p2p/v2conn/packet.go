package v2conn

import (
	"bufio"
	"fmt"
	"io"
	"net"
)

// Read buffer sizes.
const (
	// smallPacket is the largest packet (ciphertext after the length) read
	// into the reader's own reused buffer; larger ones get a buffer of
	// their own that grows with what has arrived.
	smallPacket = 16 << 10
	// readChunk is how much of a large packet is read (and its buffer
	// grown) at a time: a buffer is never larger than twice what has
	// arrived, whatever the length declared.
	readChunk = 16 << 10
	// ignoreBit marks a decoy in a packet's header byte; the other bits
	// are reserved and ignored (BIP-324).
	ignoreBit = 0x80
)

// Why not btcd's Peer.V2ReceivePacket: it allocates a buffer of the
// declared length (up to 16 MiB) as soon as it has decrypted the 3-byte
// length, before a byte of the packet has arrived and with no cap but
// 2^24-1, and it loops over decoys without a bound. packetReader uses
// btcd's two ciphers (FSChaCha20 for lengths, FSChaCha20Poly1305 for
// contents) but does the framing itself: it checks the length against the
// connection's cap and budget first and grows its buffer with the bytes
// received.

// packetReader reads and decrypts one direction's packets.
type packetReader struct {
	r           *bufio.Reader
	dir         direction
	maxContents int
	budget      Budget
	lenBuf      [LengthSize]byte
	small       []byte
}

// packet is one decrypted packet.
type packet struct {
	contents []byte // after the header byte; a fresh slice
	decoy    bool
	wireSize int   // bytes on the wire, length field included
	held     int64 // bytes taken from the budget, to return
}

// next reads one packet; aad is the associated data (the garbage, for the
// first packet of a connection).
func (pr *packetReader) next(aad []byte) (packet, error) {
	if _, err := io.ReadFull(pr.r, pr.lenBuf[:]); err != nil {
		return packet{}, fmt.Errorf("read v2 packet length: %w", err)
	}
	plainLen, err := pr.dir.length.Crypt(pr.lenBuf[:])
	if err != nil {
		return packet{}, fmt.Errorf("decrypt v2 packet length: %w", err)
	}
	length := int(plainLen[0]) | int(plainLen[1])<<8 | int(plainLen[2])<<16
	if length > pr.maxContents {
		return packet{}, fmt.Errorf("%w: %d bytes declared, cap %d", ErrPacketTooLarge, length, pr.maxContents)
	}
	n := headerSize + length + tagSize
	p := packet{wireSize: LengthSize + n}
	if pr.budget != nil {
		if !pr.budget.TryAcquire(int64(n)) {
			return packet{}, fmt.Errorf("%w: %d bytes declared", ErrOverBudget, n)
		}
		p.held = int64(n)
	}
	ct, err := pr.readCiphertext(n)
	if err != nil {
		pr.release(p.held)
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // the length promised more
		}
		return packet{}, fmt.Errorf("read v2 packet of %d bytes: %w", n, err)
	}
	plain, err := pr.dir.packet.Decrypt(aad, ct)
	if err != nil {
		pr.release(p.held)
		return packet{}, fmt.Errorf("%w: %v", ErrAuthentication, err)
	}
	p.decoy = plain[0]&ignoreBit != 0
	p.contents = plain[headerSize:]
	return p, nil
}

// readCiphertext reads n bytes: into the reused buffer when they fit, else
// into a buffer that grows by doubling as chunks arrive.
func (pr *packetReader) readCiphertext(n int) ([]byte, error) {
	if n <= smallPacket {
		if pr.small == nil {
			pr.small = make([]byte, smallPacket)
		}
		_, err := io.ReadFull(pr.r, pr.small[:n])
		return pr.small[:n], err
	}
	buf := make([]byte, 0, min(n, readChunk))
	for len(buf) < n {
		chunk := min(n-len(buf), readChunk)
		if cap(buf)-len(buf) < chunk {
			grown := make([]byte, len(buf), min(n, max(2*cap(buf), len(buf)+chunk)))
			copy(grown, buf)
			buf = grown
		}
		if _, err := io.ReadFull(pr.r, buf[len(buf):len(buf)+chunk]); err != nil {
			return nil, err
		}
		buf = buf[:len(buf)+chunk]
	}
	return buf, nil
}

func (pr *packetReader) release(n int64) {
	if n > 0 && pr.budget != nil {
		pr.budget.Release(n)
	}
}

// packetWriter encrypts one direction's packets.
type packetWriter struct {
	w     io.Writer
	dir   direction
	plain []byte // reused while small
}

// seal encrypts one packet: header, message type and payload pieces. It
// returns the encrypted length and the encrypted contents with their tag.
func (pw *packetWriter) seal(aad []byte, decoy bool, typ []byte, payload [][]byte) (encLen, ct []byte, err error) {
	header := byte(0)
	if decoy {
		header = ignoreBit
	}
	plain := append(pw.plain[:0], header)
	plain = append(plain, typ...)
	for _, p := range payload {
		plain = append(plain, p...)
	}
	length := len(plain) - headerSize
	if length > maxLength {
		return nil, nil, fmt.Errorf("%w: %d bytes of contents", ErrMessageTooLarge, length)
	}
	if cap(plain) <= smallPacket {
		pw.plain = plain
	}
	ct, err = pw.dir.packet.Encrypt(aad, plain)
	if err != nil {
		return nil, nil, fmt.Errorf("encrypt v2 packet: %w", err)
	}
	encLen, err = pw.dir.length.Crypt([]byte{byte(length), byte(length >> 8), byte(length >> 16)})
	if err != nil {
		return nil, nil, fmt.Errorf("encrypt v2 packet length: %w", err)
	}
	return encLen, ct, nil
}

// write seals one packet and writes it, in one writev where the writer is
// a TCP connection. It returns the bytes written.
func (pw *packetWriter) write(decoy bool, typ []byte, payload [][]byte) (int, error) {
	encLen, ct, err := pw.seal(nil, decoy, typ, payload)
	if err != nil {
		return 0, err
	}
	bufs := net.Buffers{encLen, ct}
	n, err := bufs.WriteTo(pw.w)
	if err == nil && int(n) != len(encLen)+len(ct) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return int(n), fmt.Errorf("write v2 packet: %w", err)
	}
	return int(n), nil
}
