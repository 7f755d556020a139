package jsonscan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// MaxDepth bounds the nesting of objects and arrays a Scanner reads or
// skips.
const MaxDepth = 64

// ErrTruncated means the document ended early.
var ErrTruncated = errors.New("unexpected end of JSON")

// Scanner reads one JSON document from buf, refilling buf from src when it
// runs out (src nil: buf is the whole document). Each reading method
// starts at the next value, whitespace allowed before it, and works on buf
// directly. The zero value reads nothing; use Reset.
type Scanner struct {
	// buf[pos:] are the bytes read and not yet consumed; src is where
	// more come from, rerr what ended it.
	src   io.Reader
	buf   []byte
	pos   int
	rerr  error
	depth int
}

// Reset makes s read a new document: from src through buf's capacity, or,
// with src nil, the bytes of buf.
func (s *Scanner) Reset(src io.Reader, buf []byte) {
	*s = Scanner{src: src, buf: buf}
}

// Buffered reports whether the whole document is in memory (src nil), so
// that slices of it returned by InPlaceString and RawString stay valid.
func (s *Scanner) Buffered() bool { return s.src == nil }

// Rest returns the unconsumed bytes followed by what src has not yet
// delivered, for a caller that hands the rest of the document to another
// decoder.
func (s *Scanner) Rest() io.Reader {
	rest := io.Reader(bytes.NewReader(s.buf[s.pos:]))
	if s.src != nil {
		rest = io.MultiReader(rest, s.src)
	}
	return rest
}

// more makes sure an unconsumed byte is buffered, reading when none is;
// false at the end of the document.
func (s *Scanner) more() bool {
	if s.pos < len(s.buf) {
		return true
	}
	if s.src == nil || s.rerr != nil {
		return false
	}
	s.buf, s.pos = s.buf[:cap(s.buf)], 0
	for range 100 {
		n, err := s.src.Read(s.buf)
		s.rerr = err
		if n > 0 {
			s.buf = s.buf[:n]
			return true
		}
		if err != nil {
			s.buf = s.buf[:0]
			return false
		}
	}
	s.buf, s.rerr = s.buf[:0], io.ErrNoProgress
	return false
}

// endErr is the error for a document that ended early: the read error,
// or ErrTruncated at its end.
func (s *Scanner) endErr() error {
	if s.rerr != nil && !errors.Is(s.rerr, io.EOF) {
		return s.rerr
	}
	return ErrTruncated
}

// Next skips whitespace and returns the next byte without consuming it.
func (s *Scanner) Next() (byte, error) {
	for {
		for s.pos < len(s.buf) {
			switch c := s.buf[s.pos]; c {
			case ' ', '\n', '\r', '\t':
				s.pos++
			default:
				return c, nil
			}
		}
		if !s.more() {
			return 0, s.endErr()
		}
	}
}

// AtEnd reports whether only whitespace is left.
func (s *Scanner) AtEnd() bool {
	_, err := s.Next()
	return errors.Is(err, ErrTruncated)
}

// Open consumes the byte c (after whitespace).
func (s *Scanner) Open(c byte) error {
	got, err := s.Next()
	if err != nil {
		return err
	}
	if got != c {
		return fmt.Errorf("found %q, want %q", got, c)
	}
	s.pos++
	return nil
}

// Byte consumes and returns one byte.
func (s *Scanner) Byte() (byte, error) {
	if !s.more() {
		return 0, s.endErr()
	}
	c := s.buf[s.pos]
	s.pos++
	return c, nil
}

// Null consumes a null literal if one is next.
func (s *Scanner) Null() (bool, error) {
	c, err := s.Next()
	if err != nil || c != 'n' {
		return false, err
	}
	for i := range len("null") {
		c, err := s.Byte()
		if err != nil {
			return false, err
		}
		if c != "null"[i] {
			return false, errors.New("bad literal")
		}
	}
	return true, nil
}

// Elements reads an array's elements after its '[': element must consume
// each.
func (s *Scanner) Elements(element func() error) error {
	return s.Items(']', "an element", element)
}

// Items reads the items of an object (its members) or an array (its
// elements) after the opening bracket, up to end: item must consume each;
// what names an item in errors.
func (s *Scanner) Items(end byte, what string, item func() error) error {
	if s.depth++; s.depth > MaxDepth {
		return errors.New("nested too deeply")
	}
	defer func() { s.depth-- }()
	c, err := s.Next()
	if err != nil {
		return err
	}
	if c == end {
		s.pos++
		return nil
	}
	for {
		if err := item(); err != nil {
			return err
		}
		c, err := s.Next()
		if err != nil {
			return err
		}
		s.pos++
		switch c {
		case ',':
		case end:
			return nil
		default:
			return fmt.Errorf("found %q after %s", c, what)
		}
	}
}

// Name reads a member name after its opening quote into key. A name longer
// than key comes back empty; a name with an escape is an error (an escaped
// name could spell one the caller reads).
func (s *Scanner) Name(key []byte) ([]byte, error) {
	// The usual case: the whole name is buffered.
	rest := s.buf[s.pos:]
	if q := bytes.IndexByte(rest, '"'); q >= 0 && q <= len(key) && bytes.IndexByte(rest[:q], '\\') < 0 {
		s.pos += q + 1
		return key[:copy(key, rest[:q])], nil
	}
	n, long := 0, false
	for {
		c, err := s.Byte()
		if err != nil {
			return nil, err
		}
		switch {
		case c == '"':
			if long {
				return key[:0], nil
			}
			return key[:n], nil
		case c == '\\':
			return nil, errors.New("escape in a member name")
		case n < len(key):
			key[n] = c
			n++
		default:
			long = true
		}
	}
}
