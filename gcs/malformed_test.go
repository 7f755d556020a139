package gcs

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// paddedFilter returns a valid basic filter (wire form) whose last byte has
// at least one padding bit, for the padding and truncation cases.
func paddedFilter(tb testing.TB) []byte {
	tb.Helper()
	var h chainhash.Hash
	for n := 1; n < 64; n++ {
		elems := make([][]byte, n)
		for i := range elems {
			elems[i] = []byte{byte(i), byte(n), 0xaa}
		}
		raw := BuildBasic(h, elems)
		f, err := NewFilterWithN(BasicParams, raw)
		if err != nil {
			tb.Fatal(err)
		}
		vals, _ := refDecode(f.N(), BasicP, f.Bytes())
		bitsUsed := 0
		var last uint64
		for _, v := range vals {
			bitsUsed += int((v-last)>>BasicP) + 1 + BasicP
			last = v
		}
		if bitsUsed%8 != 0 && n > 20 {
			return raw
		}
	}
	tb.Fatal("no padded filter found")
	return nil
}

// Every kind of malformed input is rejected with its own sentinel, through
// NewFilterWithN, NewFilter and MatchBasic alike; none panics.
func TestMalformedInput(t *testing.T) {
	good := paddedFilter(t)
	goodN, _, _ := readCompactSize(good)
	goodStream := good[1:] // N < 0xfd: one-byte prefix

	withLastBit := slices.Clone(good)
	withLastBit[len(withLastBit)-1] |= 1

	// N=1, P=19, M=784931 → N·M = 784931 = 1·2^19 + 260643.
	atNM := bitString("10 " + "0111111101000100011") // q=1, rem=260643: value = N·M
	if got, _ := refDecode(1, 19, atNM); got[0] != 784931 {
		t.Fatalf("test stream encodes %d", got[0])
	}

	type tc struct {
		name string
		p    Params
		wire []byte // NewFilterWithN input; nil to use bare
		n    uint32 // NewFilter input when wire == nil
		bare []byte
		want []error
	}
	basic := BasicParams
	cases := []tc{
		{name: "P=0", p: Params{P: 0, M: 784931}, wire: []byte{0}, want: []error{ErrBadP}},
		{name: "P=33", p: Params{P: 33, M: 784931}, wire: []byte{0}, want: []error{ErrBadP}},
		{name: "P=255 bare", p: Params{P: 255, M: 784931}, bare: []byte{}, want: []error{ErrBadP}},
		{name: "M=0", p: Params{P: 19, M: 0}, wire: []byte{0}, want: []error{ErrBadM}},
		{name: "M=2^32", p: Params{P: 19, M: 1 << 32}, wire: []byte{0}, want: []error{ErrBadM}},
		{name: "M=2^64-1 bare", p: Params{P: 19, M: ^uint64(0)}, bare: []byte{}, want: []error{ErrBadM}},
		{name: "empty input", p: basic, wire: []byte{}, want: []error{ErrTruncated}},
		{name: "CompactSize 0xfd cut", p: basic, wire: []byte{0xfd, 0x01}, want: []error{ErrTruncated}},
		{name: "CompactSize 0xff cut", p: basic, wire: []byte{0xff, 1, 2, 3}, want: []error{ErrTruncated}},
		{name: "N=2^32", p: basic, wire: []byte{0xff, 0, 0, 0, 0, 1, 0, 0, 0}, want: []error{ErrNTooLarge}},
		{name: "N=2^64-1", p: basic, wire: bytes.Repeat([]byte{0xff}, 9), want: []error{ErrNTooLarge}},
		{name: "non-canonical 0xfd", p: basic, wire: []byte{0xfd, 0x10, 0x00}, want: []error{ErrNonCanonicalN}},
		{name: "non-canonical 0xfe", p: basic, wire: []byte{0xfe, 0xff, 0xff, 0, 0}, want: []error{ErrNonCanonicalN}},
		{name: "non-canonical 0xff", p: basic, wire: []byte{0xff, 1, 0, 0, 0, 0, 0, 0, 0}, want: []error{ErrNonCanonicalN}},
		{name: "N=1 no stream", p: basic, wire: []byte{1}, want: []error{ErrNExceedsData, ErrTruncated}},
		{name: "N=2^32-1 tiny stream", p: basic, wire: []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0, 0, 0}, want: []error{ErrNExceedsData, ErrTruncated}},
		{name: "N=1000 in 10 bytes bare", p: basic, n: 1000, bare: make([]byte, 10), want: []error{ErrNExceedsData, ErrTruncated}},
		{name: "last byte cut", p: basic, wire: good[:len(good)-1], want: []error{ErrTruncated}},
		{name: "last byte cut bare", p: basic, n: uint32(goodN), bare: goodStream[:len(goodStream)-1], want: []error{ErrTruncated}},
		{name: "unary never ends", p: basic, n: 1, bare: []byte{0xff, 0xff, 0xff}, want: []error{ErrTruncated}},
		{name: "remainder cut", p: basic, n: 1, bare: bitString("11111 0 000000000 111111111"), want: []error{ErrTruncated}},
		{name: "trailing zero byte", p: basic, wire: append(slices.Clone(good), 0), want: []error{ErrTrailingData}},
		{name: "trailing garbage bare", p: basic, n: uint32(goodN), bare: append(slices.Clone(goodStream), 0xde, 0xad), want: []error{ErrTrailingData}},
		{name: "N=0 with a byte", p: basic, wire: []byte{0, 0}, want: []error{ErrTrailingData}},
		{name: "N=0 with a byte bare", p: basic, n: 0, bare: []byte{0}, want: []error{ErrTrailingData}},
		{name: "non-zero padding", p: basic, wire: withLastBit, want: []error{ErrNonZeroPadding}},
		{name: "value = N·M", p: basic, n: 1, bare: atNM, want: []error{ErrValueOutOfRange}},
		{name: "quotient past N·M", p: basic, n: 1, bare: bitString("1111 0 0000000000000000000"), want: []error{ErrValueOutOfRange}},
		{name: "second value past N·M", p: basic, n: 2, bare: bitString("11 0 1111111111111111111 11 0 1111111111111111111"), want: []error{ErrValueOutOfRange}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.wire != nil {
				_, err = NewFilterWithN(c.p, c.wire)
				if c.p == BasicParams {
					_, merr := MatchBasic(c.wire, chainhash.Hash{}, [][]byte{{1}})
					for _, w := range c.want {
						if !errors.Is(merr, w) {
							t.Errorf("MatchBasic: error %v does not wrap %v", merr, w)
						}
					}
				}
			} else {
				_, err = NewFilter(c.n, c.p, c.bare)
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !errors.Is(err, w) {
					t.Errorf("error %q does not wrap %v", err, w)
				}
			}
		})
	}
	// The unmodified input is accepted, so the cases above fail for the
	// reason they name.
	if _, err := NewFilterWithN(BasicParams, good); err != nil {
		t.Fatal(err)
	}
	if _, err := NewFilter(uint32(goodN), BasicParams, goodStream); err != nil {
		t.Fatal(err)
	}
}

// Build and the matchers reject bad parameters and a nil hasher.
func TestBadArguments(t *testing.T) {
	sip := NewSipHasher([16]byte{})
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"Build P=0", second(Build(Params{P: 0, M: 1}, sip, nil)), ErrBadP},
		{"Build M=0", second(Build(Params{P: 1, M: 0}, sip, nil)), ErrBadM},
		{"Build nil hasher", second(Build(BasicParams, nil, nil)), ErrNilHasher},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	f, err := Build(BasicParams, sip, [][]byte{{1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Match(nil, []byte{1}); !errors.Is(err, ErrNilHasher) {
		t.Errorf("Match(nil): %v", err)
	}
	if _, err := f.MatchAny(nil, [][]byte{{1}}); !errors.Is(err, ErrNilHasher) {
		t.Errorf("MatchAny(nil): %v", err)
	}
}

func second[T any](_ T, err error) error { return err }
