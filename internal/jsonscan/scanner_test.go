package jsonscan

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"testing/iotest"
)

// scanner reads doc, fully buffered or one byte per Read.
func scanner(doc string, stream bool) *Scanner {
	var s Scanner
	if stream {
		s.Reset(iotest.OneByteReader(strings.NewReader(doc)), make([]byte, 0, 4))
	} else {
		s.Reset(nil, []byte(doc))
	}
	return &s
}

func TestWalkAndSkip(t *testing.T) {
	const doc = ` {"a": [1, "x\"]", {"b": null}], "hex": "00ff", "n": -7, "u": 4294967295, "k": true} `
	for _, stream := range []bool{false, true} {
		s := scanner(doc, stream)
		if err := s.Open('{'); err != nil {
			t.Fatal(err)
		}
		var key [8]byte
		var hex []byte
		var n int64
		var u uint32
		err := s.Items('}', "a member", func() error {
			if err := s.Open('"'); err != nil {
				return err
			}
			name, err := s.Name(key[:])
			if err != nil {
				return err
			}
			if err := s.Open(':'); err != nil {
				return err
			}
			switch string(name) {
			case "hex":
				if err := s.Open('"'); err != nil {
					return err
				}
				hex, err = s.HexString(nil, 10)
			case "n":
				n, err = s.Int(64)
			case "u":
				u, err = s.Uint32()
			default:
				err = s.SkipValue()
			}
			return err
		})
		if err != nil || !s.AtEnd() {
			t.Fatalf("stream %v: %v, at end %v", stream, err, s.AtEnd())
		}
		if !bytes.Equal(hex, []byte{0, 0xff}) || n != -7 || u != 4294967295 {
			t.Fatalf("stream %v: hex %x n %d u %d", stream, hex, n, u)
		}
	}
}

func TestStrictReads(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		read func(*Scanner) error
		ok   bool
	}{
		{`12`, func(s *Scanner) error { _, err := s.Uint(); return err }, true},
		{`012`, func(s *Scanner) error { _, err := s.Uint(); return err }, false},
		{`1e3`, func(s *Scanner) error { _, err := s.Uint(); return err }, false},
		{`-1`, func(s *Scanner) error { _, err := s.Uint(); return err }, false},
		{`99999999999999999999`, func(s *Scanner) error { _, err := s.Uint(); return err }, false},
		{`"abc"`, func(s *Scanner) error { _, err := s.PlainString(); return err }, true},
		{`"a\u0062"`, func(s *Scanner) error { _, err := s.PlainString(); return err }, false},
		{`"a` + "\x01" + `"`, func(s *Scanner) error { _, err := s.PlainString(); return err }, false},
		{`"00ff"`, func(s *Scanner) error { _, err := s.RawString(); return err }, true},
		{`"00\"ff"`, func(s *Scanner) error { _, err := s.RawString(); return err }, false},
		{`"0`, func(s *Scanner) error { _, err := s.RawString(); return err }, false},
		{`nul`, func(s *Scanner) error { _, err := s.Null(); return err }, false},
		{`"0f0"`, func(s *Scanner) error { s.Open('"'); _, err := s.HexString(nil, 9); return err }, false},
		{strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), func(s *Scanner) error { return s.SkipValue() }, false},
		{strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), func(s *Scanner) error { return s.SkipValue() }, true},
	} {
		err := tc.read(scanner(tc.doc, false))
		if (err == nil) != tc.ok {
			t.Errorf("%.40q: error %v, want ok %v", tc.doc, err, tc.ok)
		}
	}
}

func TestTruncated(t *testing.T) {
	s := scanner(`{"a": "0`, true)
	s.Open('{')
	err := s.Items('}', "a member", func() error {
		if err := s.Open('"'); err != nil {
			return err
		}
		var key [4]byte
		if _, err := s.Name(key[:]); err != nil {
			return err
		}
		s.Open(':')
		return s.SkipValue()
	})
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("got %v, want ErrTruncated", err)
	}
}
