package v2conn

import (
	"bufio"
	"fmt"
	"io"
	"slices"
)

// Buffer sizes.
const (
	// smallPacket is the largest packet (ciphertext after the length)
	// whose buffer is allocated whole as soon as its length is known;
	// larger ones get a buffer that grows with what has arrived.
	smallPacket = 16 << 10
	// readChunk is how much of a large packet is read (and its buffer
	// grown) at a time: a buffer is never larger than twice what has
	// arrived, whatever the length declared.
	readChunk = 16 << 10
	// keepWriteBuffer is the largest packet buffer a writer keeps for the
	// next packet: a compact filter's packet fits, a block's does not.
	keepWriteBuffer = 64 << 10
	// ignoreBit marks a decoy in a packet's header byte; the other bits
	// are reserved and ignored (BIP-324).
	ignoreBit = 0x80
)

// Why not btcd's Peer.V2ReceivePacket: it allocates a buffer of the
// declared length (up to 16 MiB) as soon as it has decrypted the 3-byte
// length, before a byte of the packet has arrived and with no cap but
// 2^24-1, and it loops over decoys without a bound. packetReader does the
// framing itself: it checks the length against the connection's cap and
// budget first and grows its buffer with the bytes received. Both sides
// decrypt and encrypt in the packet's own buffer (cipher.go): a message
// read is one buffer, its payload a slice of it, and a message written is
// copied once, into the packet.

// packetReader reads and decrypts one direction's packets.
type packetReader struct {
	r           *bufio.Reader
	dir         direction
	maxContents int
	budget      Budget
	lenBuf      [LengthSize]byte
	// reused is the buffer of transient reads (the caller gives the
	// packet back before the next read); it keeps the largest size read.
	reused []byte
}

// packet is one decrypted packet.
type packet struct {
	contents []byte // after the header byte
	decoy    bool
	wireSize int   // bytes on the wire, length field included
	held     int64 // bytes taken from the budget, to return
}

// next reads one packet; aad is the associated data (the garbage, for the
// first packet of a connection). A transient packet is read into the
// reader's reused buffer and is valid until the next read; otherwise the
// packet's buffer is its own.
func (pr *packetReader) next(aad []byte, transient bool) (packet, error) {
	if err := readFull(pr.r, pr.lenBuf[:]); err != nil {
		return packet{}, fmt.Errorf("read v2 packet length: %w", err)
	}
	if err := pr.dir.length.crypt(pr.lenBuf[:]); err != nil {
		return packet{}, fmt.Errorf("decrypt v2 packet length: %w", err)
	}
	length := int(pr.lenBuf[0]) | int(pr.lenBuf[1])<<8 | int(pr.lenBuf[2])<<16
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
	var buf []byte
	if transient {
		buf = pr.reused
	}
	ct, err := readCiphertext(pr.r, buf, n)
	if transient && cap(ct) > cap(pr.reused) {
		pr.reused = ct[:0]
	}
	if err != nil {
		pr.release(p.held)
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // the length promised more
		}
		return packet{}, fmt.Errorf("read v2 packet of %d bytes: %w", n, err)
	}
	plain, err := pr.dir.packet.open(ct, aad)
	if err != nil {
		pr.release(p.held)
		return packet{}, fmt.Errorf("%w: %v", ErrAuthentication, err)
	}
	p.decoy = plain[0]&ignoreBit != 0
	p.contents = plain[headerSize:]
	return p, nil
}

// readFull is io.ReadFull on r, copying straight from r's buffer when the
// bytes are there, as they are for most packets of a stream.
func readFull(r *bufio.Reader, b []byte) error {
	if r.Buffered() >= len(b) {
		_, err := r.Read(b) // all of b, from the buffer
		return err
	}
	_, err := io.ReadFull(r, b)
	return err
}

// readCiphertext reads n bytes into buf when they fit its capacity, else
// into a new buffer: allocated whole for a small packet, grown by doubling
// as chunks of a large one arrive (starting from buf's bytes' room).
func readCiphertext(r *bufio.Reader, buf []byte, n int) ([]byte, error) {
	switch {
	case cap(buf) >= n:
		buf = buf[:n]
		return buf, readFull(r, buf)
	case n <= smallPacket:
		buf = make([]byte, n)
		_, err := io.ReadFull(r, buf)
		return buf, err
	}
	if first := min(n, readChunk); cap(buf) < first {
		buf = make([]byte, 0, first)
	} else {
		buf = buf[:0]
	}
	for len(buf) < n {
		chunk := min(n-len(buf), readChunk)
		if cap(buf)-len(buf) < chunk {
			grown := make([]byte, len(buf), min(n, max(2*cap(buf), len(buf)+chunk)))
			copy(grown, buf)
			buf = grown
		}
		if _, err := io.ReadFull(r, buf[len(buf):len(buf)+chunk]); err != nil {
			return buf, err
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
	w   io.Writer
	dir direction
	buf []byte // reused up to keepWriteBuffer
}

// seal lays out one packet — length, header, message type, payload
// pieces, room for the tag — and encrypts it in place. The packet is valid
// until the next seal.
func (pw *packetWriter) seal(aad []byte, decoy bool, typ []byte, payload [][]byte) ([]byte, error) {
	pkt, err := pw.appendPacket(pw.buf[:0], aad, decoy, typ, payload)
	if err != nil {
		return nil, err
	}
	if cap(pkt) <= keepWriteBuffer {
		pw.buf = pkt[:0]
	}
	return pkt, nil
}

// appendPacket appends one sealed packet to dst: the payload pieces are
// copied once, into the packet, and both ciphers work in place there.
func (pw *packetWriter) appendPacket(dst, aad []byte, decoy bool, typ []byte, payload [][]byte) ([]byte, error) {
	length := len(typ)
	for _, p := range payload {
		length += len(p)
	}
	if length > maxLength {
		return dst, fmt.Errorf("%w: %d bytes of contents", ErrMessageTooLarge, length)
	}
	header := byte(0)
	if decoy {
		header = ignoreBit
	}
	start := len(dst)
	dst = slices.Grow(dst, LengthSize+headerSize+length+tagSize)
	dst = append(dst, byte(length), byte(length>>8), byte(length>>16), header)
	dst = append(dst, typ...)
	for _, p := range payload {
		dst = append(dst, p...)
	}
	if err := pw.dir.length.crypt(dst[start : start+LengthSize]); err != nil {
		return dst[:start], fmt.Errorf("encrypt v2 packet length: %w", err)
	}
	sealed, err := pw.dir.packet.seal(dst[start+LengthSize:], aad)
	if err != nil {
		return dst[:start], fmt.Errorf("encrypt v2 packet: %w", err)
	}
	return dst[:start+LengthSize+len(sealed)], nil
}

// write seals one packet and writes it in one write. It returns the bytes
// written.
func (pw *packetWriter) write(decoy bool, typ []byte, payload [][]byte) (int, error) {
	pkt, err := pw.seal(nil, decoy, typ, payload)
	if err != nil {
		return 0, err
	}
	n, err := pw.w.Write(pkt)
	if err == nil && n != len(pkt) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return n, fmt.Errorf("write v2 packet: %w", err)
	}
	return n, nil
}
