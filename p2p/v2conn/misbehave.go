package v2conn

import (
	"fmt"
	"io"
)

// WriteDecoy sends one decoy packet (BIP-324's ignore bit) whose contents
// are contents: the peer reads, authenticates and drops it. Core sends
// none; cfbench's hostile classes flood with them, to show that a
// server's decoy bound (Config.MaxDecoyBytes) and receive budgets hold.
func (c *Conn) WriteDecoy(contents []byte) (int, error) {
	n, err := c.wr.write(true, nil, [][]byte{contents})
	if err != nil {
		return n, fmt.Errorf("write decoy: %w", err)
	}
	return n, nil
}

// WriteLengthOnly sends the encrypted 3-byte length of a packet declaring
// length bytes of contents (at most what 3 bytes hold, 16 MiB less one)
// and nothing after it. For attack tools only: the peer must refuse a
// length over its cap before it reads or allocates anything for it, and
// the connection can carry nothing more (the peer's ciphers expect the
// rest of the packet).
func (c *Conn) WriteLengthOnly(length int) (int, error) {
	if length < 0 || length > maxLength {
		return 0, fmt.Errorf("%w: %d bytes of contents", ErrMessageTooLarge, length)
	}
	b := []byte{byte(length), byte(length >> 8), byte(length >> 16)}
	if err := c.wr.dir.length.crypt(b); err != nil {
		return 0, fmt.Errorf("encrypt v2 packet length: %w", err)
	}
	n, err := c.wr.w.Write(b)
	if err == nil && n != len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return n, fmt.Errorf("write v2 packet length: %w", err)
	}
	return n, nil
}
