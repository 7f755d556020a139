package gcs

import (
	"bytes"
	"encoding/base64"
	"errors"
	"testing"

	"github.com/cfindexd/cfindexd/internal/testvectors"
)

// knownErrors are the sentinels a decode may fail with.
var knownErrors = []error{
	ErrBadP, ErrBadM, ErrNTooLarge, ErrNExceedsData, ErrTruncated,
	ErrTrailingData, ErrNonZeroPadding, ErrValueOutOfRange, ErrNonCanonicalN,
}

func wrapsKnown(err error) bool {
	for _, s := range knownErrors {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// fuzzParams keeps fuzzed parameters mostly valid so the fuzzer explores
// the stream decoder rather than parameter checks (which still get hit).
func fuzzParams(p uint8, m uint32) Params { return Params{P: p % 34, M: uint64(m)} }

func addSeeds(f *testing.F) {
	for _, v := range testvectors.LoadBIP158(f) {
		f.Add(v.Filter, uint8(BasicP), uint32(BasicM), []byte{0x51})
	}
	cv := loadCashuVectors(f)
	for _, v := range []cashuVariant{cv.NUT25, cv.NUT23} {
		stream, err := base64.StdEncoding.DecodeString(v.ExpectedContent)
		if err != nil {
			f.Fatal(err)
		}
		items := mustHexList(f, v.Items)
		wire := append([]byte{byte(len(items))}, stream...)
		f.Add(wire, uint8(CashuP), uint32(CashuM), items[0])
	}
	f.Add([]byte{0}, uint8(19), uint32(784931), []byte{})
	f.Add([]byte{0xfd, 0x00, 0x01, 0xff}, uint8(1), uint32(1), []byte{1})
}

// FuzzDecode: arbitrary bytes never panic; they either fail with a known
// sentinel or decode to a filter that re-encodes to exactly the input
// (both forms), agrees with the reference decoder, and whose stream the
// reference encoder reproduces (so acceptance means canonical).
func FuzzDecode(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, wire []byte, p uint8, m uint32, _ []byte) {
		params := fuzzParams(p, m)
		flt, err := NewFilterWithN(params, wire)
		if err != nil {
			if !wrapsKnown(err) {
				t.Fatalf("unknown error: %v", err)
			}
			return
		}
		if !bytes.Equal(flt.BytesWithN(), wire) {
			t.Fatalf("re-encoding %x != input %x", flt.BytesWithN(), wire)
		}
		vals, ok := refDecode(flt.N(), params.P, flt.Bytes())
		if !ok {
			t.Fatal("reference decoder ran out of data on an accepted stream")
		}
		if !bytes.Equal(refEncode(vals, params.P), flt.Bytes()) {
			t.Fatal("reference re-encoding differs")
		}
		bare, err := NewFilter(flt.N(), params, flt.Bytes())
		if err != nil || !bytes.Equal(bare.BytesWithN(), wire) {
			t.Fatalf("bare round trip: %v", err)
		}
	})
}

// FuzzMatch: on any accepted filter, Match and MatchAny agree with a
// membership test against the reference decoder's values; a filter built
// from fuzzed items matches them.
func FuzzMatch(f *testing.F) {
	addSeeds(f)
	h := NewSipHasher([16]byte{7})
	f.Fuzz(func(t *testing.T, wire []byte, p uint8, m uint32, item []byte) {
		params := fuzzParams(p, m)
		flt, err := NewFilterWithN(params, wire)
		if err != nil {
			return
		}
		vals, _ := refDecode(flt.N(), params.P, flt.Bytes())
		nm := uint64(flt.N()) * params.M
		in := func(it []byte) bool {
			target := HashToRange(h.Hash64(it), nm)
			for _, v := range vals {
				if v == target {
					return true
				}
			}
			return false
		}
		for _, hasher := range []Hasher{h, hasherFunc(h.Hash64)} { // fast path and generic path
			got, err := flt.Match(hasher, item)
			if err != nil || got != in(item) {
				t.Fatalf("Match = %v, %v; reference %v", got, err, in(item))
			}
			other := append(bytes.Clone(item), 0x01)
			items := [][]byte{other, item, nil}
			want := in(item) || in(other) || in(nil)
			got, err = flt.MatchAny(hasher, items)
			if err != nil || got != want {
				t.Fatalf("MatchAny = %v, %v; reference %v", got, err, want)
			}
		}
		// A filter built from the fuzzed item (and the wire bytes as a
		// second item) always matches both.
		if params.Validate() == nil && params.M>>params.P <= 1<<16 {
			own, err := Build(params, h, [][]byte{item, wire})
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range [][]byte{item, wire} {
				if ok, _ := own.Match(h, it); !ok {
					t.Fatal("member missed")
				}
			}
			if ok, _ := own.MatchAny(h, [][]byte{{0xee, 0xee}, wire}); !ok {
				t.Fatal("MatchAny missed a member")
			}
		}
	})
}

// hasherFunc adapts a function to Hasher (and hides SipHasher's fast path).
type hasherFunc func([]byte) uint64

func (f hasherFunc) Hash64(b []byte) uint64 { return f(b) }

// FuzzNewFilter: the bare form with an arbitrary N beside it never panics,
// fails only with known sentinels, and round-trips when accepted.
func FuzzNewFilter(f *testing.F) {
	for _, v := range testvectors.LoadBIP158(f) {
		n, off, err := readCompactSize(v.Filter)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint32(n), v.Filter[off:], uint8(BasicP), uint32(BasicM))
		f.Add(uint32(n+1), v.Filter[off:], uint8(BasicP), uint32(BasicM))
	}
	cv := loadCashuVectors(f)
	for _, v := range []cashuVariant{cv.NUT25, cv.NUT23} {
		stream, err := base64.StdEncoding.DecodeString(v.ExpectedContent)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint32(len(v.Items)), stream, uint8(CashuP), uint32(CashuM))
	}
	f.Add(uint32(1<<32-1), []byte{0, 0, 0}, uint8(1), uint32(1))
	f.Fuzz(func(t *testing.T, n uint32, data []byte, p uint8, m uint32) {
		params := fuzzParams(p, m)
		flt, err := NewFilter(n, params, data)
		if err != nil {
			if !wrapsKnown(err) {
				t.Fatalf("unknown error: %v", err)
			}
			return
		}
		if flt.N() != n || !bytes.Equal(flt.Bytes(), data) {
			t.Fatal("round trip differs")
		}
		if _, err := flt.MatchAny(CashuNUT25Hasher{}, [][]byte{data, {1}}); err != nil {
			t.Fatal(err)
		}
	})
}
