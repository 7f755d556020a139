package jsonscan

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
)

// HexString decodes the hex digits of a string, after its opening quote,
// onto dst; dst may not grow beyond limit bytes. Anything but hex digits
// (an escape included) is an error.
func (s *Scanner) HexString(dst []byte, limit int) ([]byte, error) {
	var carry byte
	haveCarry := false
	for {
		if !s.more() {
			return dst, s.endErr()
		}
		rest := s.buf[s.pos:]
		q := bytes.IndexByte(rest, '"')
		chunk := rest
		if q >= 0 {
			chunk = rest[:q]
		}
		s.pos += len(chunk)
		if haveCarry && len(chunk) > 0 {
			var b [1]byte
			if _, err := hex.Decode(b[:], []byte{carry, chunk[0]}); err != nil {
				return dst, err
			}
			if len(dst)+1 > limit {
				return dst, fmt.Errorf("longer than %d bytes", limit)
			}
			dst = append(dst, b[0])
			chunk = chunk[1:]
			haveCarry = false
		}
		even := len(chunk) &^ 1
		if len(dst)+even/2 > limit {
			return dst, fmt.Errorf("longer than %d bytes", limit)
		}
		n := len(dst)
		dst = growBytes(dst, even/2)
		if _, err := hex.Decode(dst[n:], chunk[:even]); err != nil {
			return dst, err
		}
		if even < len(chunk) {
			carry, haveCarry = chunk[even], true
		}
		if q >= 0 {
			s.pos++ // the closing quote
			if haveCarry {
				return dst, errors.New("odd number of hex digits")
			}
			return dst, nil
		}
	}
}

// growBytes extends b by n bytes, reallocating geometrically.
func growBytes(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), max(2*cap(b), len(b)+n))
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// SmallString reads a string of at most len(buf) bytes without escapes.
func (s *Scanner) SmallString(buf []byte) ([]byte, error) {
	if err := s.Open('"'); err != nil {
		return nil, err
	}
	n := 0
	for {
		c, err := s.Byte()
		if err != nil {
			return nil, err
		}
		switch {
		case c == '"':
			return buf[:n], nil
		case c == '\\':
			return nil, errors.New("escape in a string")
		case n == len(buf):
			return nil, fmt.Errorf("string longer than %d bytes", len(buf))
		}
		buf[n] = c
		n++
	}
}

// RawString reads a string without escapes and returns its bytes in place
// (a slice of the document, valid while it is: see Buffered). It finds
// the closing quote with bytes.IndexByte (vectorized, where a byte loop
// over megabytes of hex is not) and checks nothing else: the caller
// decodes or validates what is inside. The string must be wholly
// buffered.
func (s *Scanner) RawString() ([]byte, error) {
	if err := s.Open('"'); err != nil {
		return nil, err
	}
	rest := s.buf[s.pos:]
	n := bytes.IndexByte(rest, '"')
	if n < 0 {
		return nil, ErrTruncated
	}
	if bytes.IndexByte(rest[:n], '\\') >= 0 {
		return nil, errors.New("escape in a string")
	}
	s.pos += n + 1
	return rest[:n:n], nil
}

// PlainString reads a string made only of printable ASCII without
// escapes and returns it in place, as RawString does.
func (s *Scanner) PlainString() ([]byte, error) {
	if err := s.Open('"'); err != nil {
		return nil, err
	}
	rest := s.buf[s.pos:]
	for i, c := range rest {
		switch {
		case c == '"':
			s.pos += i + 1
			return rest[:i:i], nil
		case c == '\\' || c < 0x20 || c > 0x7e:
			return nil, errors.New("not a plain string")
		}
	}
	return nil, ErrTruncated
}

// Uint reads a non-negative integer without sign, leading zeros, fraction
// or exponent, below 10^19 (so it fits a uint64).
func (s *Scanner) Uint() (uint64, error) {
	if _, err := s.Next(); err != nil {
		return 0, err
	}
	var v uint64
	n := 0
	for ; s.more(); n++ {
		c := s.buf[s.pos]
		if c < '0' || c > '9' {
			switch c {
			case '.', 'e', 'E', '-', '+':
				return 0, errors.New("not an unsigned integer")
			}
			break
		}
		if n >= 19 || n == 1 && v == 0 {
			return 0, errors.New("not an unsigned integer below 10^19 without leading zeros")
		}
		v = v*10 + uint64(c-'0')
		s.pos++
	}
	if n == 0 {
		return 0, errors.New("not an unsigned integer")
	}
	return v, nil
}

// Number reads a JSON integer token (no fraction or exponent) into buf.
func (s *Scanner) Number(buf []byte) ([]byte, error) {
	if _, err := s.Next(); err != nil {
		return nil, err
	}
	n := 0
	for s.more() {
		c := s.buf[s.pos]
		if (c < '0' || c > '9') && c != '-' {
			if c == '.' || c == 'e' || c == 'E' || c == '+' {
				return nil, errors.New("not an integer")
			}
			return buf[:n], nil
		}
		if n == len(buf) {
			return nil, errors.New("number too long")
		}
		buf[n] = c
		n++
		s.pos++
	}
	if n > 0 && s.src == nil {
		return buf[:n], nil // a document that is just a number
	}
	return nil, s.endErr()
}

// Int reads a signed integer of bits bits.
func (s *Scanner) Int(bits int) (int64, error) {
	var buf [24]byte
	t, err := s.Number(buf[:])
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(string(t), 10, bits)
}

// Uint32 reads an unsigned 32-bit integer.
func (s *Scanner) Uint32() (uint32, error) {
	var buf [24]byte
	t, err := s.Number(buf[:])
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(string(t), 10, 32)
	return uint32(v), err
}

// SkipValue consumes one value of any kind without keeping it. Containers
// are only scanned for their end (strings and brackets), not checked.
func (s *Scanner) SkipValue() error {
	c, err := s.Next()
	if err != nil {
		return err
	}
	switch c {
	case '"':
		s.pos++
		return s.skipString()
	case '{', '[':
		return s.skipContainer()
	}
	// A number or a literal.
	n := 0
	for s.more() {
		c := s.buf[s.pos]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '+' || c == '.') {
			if n == 0 {
				return fmt.Errorf("found %q, want a value", c)
			}
			return nil
		}
		n++
		s.pos++
	}
	return s.endErr()
}

// skipString consumes a string after its opening quote.
func (s *Scanner) skipString() error {
	for {
		if !s.more() {
			return s.endErr()
		}
		rest := s.buf[s.pos:]
		q := bytes.IndexByte(rest, '"')
		end := len(rest)
		if q >= 0 {
			end = q
		}
		if bytes.IndexByte(rest[:end], '\\') >= 0 {
			return s.skipEscapedString()
		}
		if q >= 0 {
			s.pos += q + 1
			return nil
		}
		s.pos = len(s.buf)
	}
}

// skipEscapedString is skipString one byte at a time, for strings with
// escapes.
func (s *Scanner) skipEscapedString() error {
	escaped := false
	for {
		c, err := s.Byte()
		if err != nil {
			return err
		}
		switch {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '"':
			return nil
		}
	}
}

// skipContainer consumes an object or array, from its opening bracket to
// the matching close, skipping strings inside.
func (s *Scanner) skipContainer() error {
	depth := 0
	for {
		if !s.more() {
			return s.endErr()
		}
		for s.pos < len(s.buf) {
			c := s.buf[s.pos]
			s.pos++
			switch c {
			case '"':
				if err := s.skipString(); err != nil {
					return err
				}
			case '{', '[':
				if depth++; s.depth+depth > MaxDepth {
					return errors.New("nested too deeply")
				}
			case '}', ']':
				if depth--; depth == 0 {
					return nil
				}
			}
		}
	}
}
