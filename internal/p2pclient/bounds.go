package p2pclient

import (
	"encoding/binary"
	"fmt"
)

// wire's decoders check declared counts against fixed maxima, not against
// the payload: a 60-byte tx declaring 780,000 inputs makes wire allocate
// them before it runs out of bytes. These walks check every count against
// the bytes that remain, without allocating, before wire decodes.

// cursor walks a payload.
type cursor struct {
	b   []byte
	pos int
}

func (c *cursor) left() int { return len(c.b) - c.pos }

func (c *cursor) skip(n uint64) error {
	if n > uint64(c.left()) {
		return fmt.Errorf("%w: %d bytes needed, %d left", ErrProtocol, n, c.left())
	}
	c.pos += int(n)
	return nil
}

func (c *cursor) compactSize() (uint64, error) {
	if c.left() < 1 {
		return 0, fmt.Errorf("%w: truncated CompactSize", ErrProtocol)
	}
	first := c.b[c.pos]
	c.pos++
	var n int
	switch first {
	case 0xfd:
		n = 2
	case 0xfe:
		n = 4
	case 0xff:
		n = 8
	default:
		return uint64(first), nil
	}
	if c.left() < n {
		return 0, fmt.Errorf("%w: truncated CompactSize", ErrProtocol)
	}
	var v uint64
	switch n {
	case 2:
		v = uint64(binary.LittleEndian.Uint16(c.b[c.pos:]))
	case 4:
		v = uint64(binary.LittleEndian.Uint32(c.b[c.pos:]))
	default:
		v = binary.LittleEndian.Uint64(c.b[c.pos:])
	}
	c.pos += n
	return v, nil
}

// count reads a CompactSize count of items of at least minSize bytes each
// and checks that many could fit in what is left.
func (c *cursor) count(minSize int) (uint64, error) {
	n, err := c.compactSize()
	if err != nil {
		return 0, err
	}
	if n > uint64(c.left())/uint64(minSize) {
		return 0, fmt.Errorf("%w: %d items declared, %d bytes left", ErrProtocol, n, c.left())
	}
	return n, nil
}

// varBytes skips a CompactSize-prefixed byte string.
func (c *cursor) varBytes() error {
	n, err := c.compactSize()
	if err != nil {
		return err
	}
	return c.skip(n)
}

// tx walks one serialized transaction (with or without witness).
func (c *cursor) tx() error {
	if err := c.skip(4); err != nil {
		return err
	}
	witness := c.left() >= 2 && c.b[c.pos] == 0 && c.b[c.pos+1] != 0
	if witness {
		c.pos += 2
	}
	nIn, err := c.count(41)
	if err != nil {
		return err
	}
	for range nIn {
		if err := c.skip(36); err != nil {
			return err
		}
		if err := c.varBytes(); err != nil {
			return err
		}
		if err := c.skip(4); err != nil {
			return err
		}
	}
	nOut, err := c.count(9)
	if err != nil {
		return err
	}
	for range nOut {
		if err := c.skip(8); err != nil {
			return err
		}
		if err := c.varBytes(); err != nil {
			return err
		}
	}
	if witness {
		for range nIn {
			items, err := c.count(1)
			if err != nil {
				return err
			}
			for range items {
				if err := c.varBytes(); err != nil {
					return err
				}
			}
		}
	}
	return c.skip(4)
}

// checkTx checks a tx payload's counts.
func checkTx(b []byte) error {
	c := cursor{b: b}
	return c.tx()
}

// checkBlock checks a block payload's counts.
func checkBlock(b []byte) error {
	c := cursor{b: b}
	if err := c.skip(80); err != nil {
		return err
	}
	n, err := c.count(10)
	if err != nil {
		return err
	}
	for range n {
		if err := c.tx(); err != nil {
			return err
		}
	}
	return nil
}

// checkList checks a message that is a fixed prefix, a CompactSize count
// and that many items of itemSize bytes.
func checkList(b []byte, prefix, itemSize int) error {
	c := cursor{b: b}
	if err := c.skip(uint64(prefix)); err != nil {
		return err
	}
	_, err := c.count(itemSize)
	return err
}
