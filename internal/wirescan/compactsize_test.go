package wirescan

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"
)

// compactSizeBoundaries are the values where the encoding changes size.
var compactSizeBoundaries = []uint64{0, 1, 0xfc, 0xfd, 0xfe, 0xffff, 0x10000, 0xffffffff, 0x100000000, 1<<64 - 1}

// Every writer produces wire's encoding at every size boundary, of the
// length CompactSizeLen says, and ReadCompactSize reads it back from the
// front of longer input, taking exactly its bytes.
func TestCompactSizeRoundTrip(t *testing.T) {
	for _, v := range compactSizeBoundaries {
		var want bytes.Buffer
		if err := wire.WriteVarInt(&want, 0, v); err != nil {
			t.Fatal(err)
		}
		got := AppendCompactSize([]byte{0xaa}, v)[1:]
		if !bytes.Equal(got, want.Bytes()) || len(got) != CompactSizeLen(v) {
			t.Fatalf("%#x: AppendCompactSize %x, wire %x, CompactSizeLen %d", v, got, want.Bytes(), CompactSizeLen(v))
		}
		put := bytes.Repeat([]byte{0xaa}, MaxCompactSizeLen+1)
		if n := PutCompactSize(put, v); n != len(got) || !bytes.Equal(put[:n], got) || put[n] != 0xaa {
			t.Fatalf("%#x: PutCompactSize wrote %x (%d)", v, put, n)
		}
		rv, n, err := ReadCompactSize(append(got, 0xaa))
		if err != nil || rv != v || n != len(got) {
			t.Fatalf("%#x: ReadCompactSize = %#x, %d, %v", v, rv, n, err)
		}
	}
}

// Non-canonical and truncated encodings are refused with their sentinels
// by the strict reader; the count reader takes non-canonical ones at their
// value.
func TestReadCompactSizeRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []byte
		want error
		lax  uint64 // the count reader's value; 0 where it fails too
	}{
		{"empty", nil, ErrTruncated, 0},
		{"0xfd cut", []byte{0xfd, 0x01}, ErrTruncated, 0},
		{"0xfe cut", []byte{0xfe, 1, 2, 3}, ErrTruncated, 0},
		{"0xff cut", []byte{0xff, 1, 2, 3, 4, 5, 6, 7}, ErrTruncated, 0},
		{"0xfc in 3 bytes", []byte{0xfd, 0xfc, 0x00}, ErrNonCanonical, 0xfc},
		{"0 in 3 bytes", []byte{0xfd, 0, 0}, ErrNonCanonical, 0},
		{"0xffff in 5 bytes", []byte{0xfe, 0xff, 0xff, 0, 0}, ErrNonCanonical, 0xffff},
		{"0xffffffff in 9 bytes", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, ErrNonCanonical, 0xffffffff},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, _, err := ReadCompactSize(c.in); !errors.Is(err, c.want) {
				t.Fatalf("ReadCompactSize: %v, want %v", err, c.want)
			}
			if _, err := wire.ReadVarInt(bytes.NewReader(c.in), 0); err == nil {
				t.Fatal("wire accepts it")
			}
			r := NewCountReader(c.in)
			v, err := r.CompactSize()
			if c.want == ErrTruncated {
				if !errors.Is(err, ErrTruncated) {
					t.Fatalf("count reader: %v", err)
				}
				return
			}
			if err != nil || v != c.lax || r.Len() != 0 {
				t.Fatalf("count reader: %#x, %v, %d left", v, err, r.Len())
			}
		})
	}
}

// FuzzReadCompactSize: ReadCompactSize accepts exactly what wire's
// ReadVarInt accepts, with the same value and length; the count reader
// reads every complete encoding at its little-endian value.
func FuzzReadCompactSize(f *testing.F) {
	for _, v := range compactSizeBoundaries {
		f.Add(AppendCompactSize(nil, v))
	}
	f.Add([]byte{0xfd, 0xfc, 0x00})
	f.Fuzz(func(t *testing.T, in []byte) {
		v, n, err := ReadCompactSize(in)
		wr := bytes.NewReader(in)
		wv, werr := wire.ReadVarInt(wr, 0)
		if (err == nil) != (werr == nil) {
			t.Fatalf("ReadCompactSize error %v, wire error %v", err, werr)
		}
		if err == nil && (v != wv || n != len(in)-wr.Len()) {
			t.Fatalf("ReadCompactSize %#x (%d bytes), wire %#x (%d bytes)", v, n, wv, len(in)-wr.Len())
		}
		if err != nil && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrNonCanonical) {
			t.Fatalf("unknown error %v", err)
		}
		r := NewCountReader(in)
		lv, lerr := r.CompactSize()
		if len(in) == 0 || len(in) < map[byte]int{0xfd: 3, 0xfe: 5, 0xff: 9}[in[0]] {
			if !errors.Is(lerr, ErrTruncated) {
				t.Fatalf("count reader on %x: %v", in, lerr)
			}
			return
		}
		want := uint64(in[0])
		if in[0] >= 0xfd {
			var le [8]byte
			copy(le[:], in[1:r.Offset()])
			want = binary.LittleEndian.Uint64(le[:])
		}
		if lerr != nil || lv != want || err == nil && (lv != v || r.Offset() != n) {
			t.Fatalf("count reader on %x: %#x, %v after %d bytes", in, lv, lerr, r.Offset())
		}
	})
}
