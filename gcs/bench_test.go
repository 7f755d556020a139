package gcs

import (
	"fmt"
	"math/rand/v2"
	"testing"

	btcgcs "github.com/btcsuite/btcd/btcutil/v2/gcs"
	"github.com/btcsuite/btcd/btcutil/v2/gcs/builder"
	"github.com/btcsuite/btcd/chainhash/v2"
)

// benchBlock is a realistic block: 8,000 distinct 22–34-byte scripts.
func benchBlock() (chainhash.Hash, [][]byte) { return benchBlockN(8000) }

// benchBlockN is a block of n distinct 22–34-byte scripts.
func benchBlockN(n int) (chainhash.Hash, [][]byte) {
	rng := rand.New(rand.NewPCG(uint64(n), 1))
	hash := randomHash(rng)
	elems := make([][]byte, n)
	for i := range elems {
		e := make([]byte, 22+rng.IntN(13))
		for j := range e {
			e[j] = byte(rng.Uint32())
		}
		elems[i] = e
	}
	return hash, elems
}

func benchQueries(n int) [][]byte {
	rng := rand.New(rand.NewPCG(100, 2))
	qs := make([][]byte, n)
	for i := range qs {
		q := make([]byte, 22+rng.IntN(13))
		for j := range q {
			q[j] = byte(rng.Uint32())
		}
		qs[i] = q
	}
	return qs
}

// BenchmarkBuild: element list → serialized BIP-158 filter (wire form).
func BenchmarkBuild(b *testing.B) {
	hash, elems := benchBlock()
	benchBuild(b, hash, elems)
}

// BenchmarkBuildSmall: BenchmarkBuild for the small blocks that dominate a
// catch-up (tens to a few hundred elements), where per-call overhead and
// the small-N sort matter more than the per-element cost.
func BenchmarkBuildSmall(b *testing.B) {
	for _, n := range []int{8, 32, 128} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			hash, elems := benchBlockN(n)
			benchBuild(b, hash, elems)
		})
	}
}

// benchBuild runs the cfindexd and btcutil builders on one block, as
// sub-benchmarks whose ns/op ratio is the comparison.
func benchBuild(b *testing.B, hash chainhash.Hash, elems [][]byte) {
	b.Run("cfindexd", func(b *testing.B) {
		var bb BasicBuilder
		b.ReportAllocs()
		for b.Loop() {
			bb.Reset()
			for _, e := range elems {
				bb.Add(e)
			}
			_ = bb.AppendFilter(nil, hash)
		}
	})
	b.Run("btcutil", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f, err := builder.WithKeyHash(&hash).AddEntries(elems).Build()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.NBytes(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func benchFilters(b *testing.B) (chainhash.Hash, [][]byte, *Filter, *btcgcs.Filter) {
	hash, elems := benchBlock()
	raw := BuildBasic(hash, elems)
	f, err := NewFilterWithN(BasicParams, raw)
	if err != nil {
		b.Fatal(err)
	}
	bf, err := btcgcs.FromNBytes(BasicP, BasicM, raw)
	if err != nil {
		b.Fatal(err)
	}
	return hash, elems, f, bf
}

// BenchmarkMatchAny: 100 non-member queries against the 8,000-element
// filter (the whole stream is walked).
func BenchmarkMatchAny(b *testing.B) {
	hash, _, f, bf := benchFilters(b)
	qs := benchQueries(100)
	// Held as a Hasher, as a caller would: converting the 16-byte
	// SipHasher to an interface on every call would allocate.
	var key Hasher = NewSipHasher(BlockKey(hash))
	bkey := builder.DeriveKey(&hash)
	b.Run("cfindexd", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if ok, _ := f.MatchAny(key, qs); ok {
				b.Fatal("false positive in benchmark queries")
			}
		}
	})
	b.Run("btcutil", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if ok, _ := bf.MatchAny(bkey, qs); ok {
				b.Fatal("false positive in benchmark queries")
			}
		}
	})
}

// BenchmarkMatch: one query against the 8,000-element filter, cycling
// through members and non-members.
func BenchmarkMatch(b *testing.B) {
	hash, elems, f, bf := benchFilters(b)
	qs := append(benchQueries(50), elems[:50]...)
	// Held as a Hasher, as a caller would: converting the 16-byte
	// SipHasher to an interface on every call would allocate.
	var key Hasher = NewSipHasher(BlockKey(hash))
	bkey := builder.DeriveKey(&hash)
	b.Run("cfindexd", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			_, _ = f.Match(key, qs[i%len(qs)])
			i++
		}
	})
	b.Run("btcutil", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			_, _ = bf.Match(bkey, qs[i%len(qs)])
			i++
		}
	})
}

// BenchmarkDecode: validating an 8,000-element wire-form filter from
// untrusted bytes (btcutil's FromNBytes only copies, so it has no peer).
func BenchmarkDecode(b *testing.B) {
	hash, elems := benchBlock()
	raw := BuildBasic(hash, elems)
	b.Run("cfindexd", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if _, err := NewFilterWithN(BasicParams, raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
