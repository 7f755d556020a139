package gcs

import (
	"bytes"
	"math/rand/v2"
	"testing"

	btcgcs "github.com/btcsuite/btcd/btcutil/v2/gcs"
	"github.com/btcsuite/btcd/btcutil/v2/gcs/builder"
	"github.com/btcsuite/btcd/chainhash/v2"
)

// btcutilBasic builds the filter btcutil's builder.BuildBasicFilter would
// build for this element list: empty elements skipped, the rest
// de-duplicated by bytes, keyed by the block hash.
func btcutilBasic(tb testing.TB, hash chainhash.Hash, elems [][]byte) (*btcgcs.Filter, []byte) {
	tb.Helper()
	b := builder.WithKeyHash(&hash)
	for _, e := range elems {
		if len(e) == 0 {
			continue
		}
		b.AddEntry(e)
	}
	f, err := b.Build()
	if err != nil {
		tb.Fatal(err)
	}
	nb, err := f.NBytes()
	if err != nil {
		tb.Fatal(err)
	}
	return f, nb
}

// randomElementSet draws a block-like element list: log-uniform size from
// 0 to 10,000, 0–40-byte elements, some empty, about a fifth repeated.
func randomElementSet(rng *rand.Rand) [][]byte {
	var n int
	switch rng.IntN(20) {
	case 0:
		n = 0
	case 1:
		n = 1 + rng.IntN(3)
	default:
		n = int(10000 * pow01(rng.Float64()))
	}
	elems := make([][]byte, 0, n)
	for range n {
		if len(elems) > 0 && rng.IntN(5) == 0 {
			elems = append(elems, bytes.Clone(elems[rng.IntN(len(elems))]))
			continue
		}
		l := rng.IntN(41)
		if rng.IntN(30) == 0 {
			l = 0
		}
		e := make([]byte, l)
		for i := range e {
			e[i] = byte(rng.Uint32())
		}
		elems = append(elems, e)
	}
	return elems
}

// pow01 maps a uniform [0,1) draw to a log-uniform one in [1e-4, 1).
func pow01(u float64) float64 {
	x := 1e-4
	for range int(u * 40) {
		x *= 1.2589254117941673 // 10^(1/10)
	}
	return x
}

func randomHash(rng *rand.Rand) chainhash.Hash {
	var h chainhash.Hash
	for i := range h {
		h[i] = byte(rng.Uint32())
	}
	return h
}

// Against btcutil on thousands of random element sets: byte-identical
// filters from BuildBasic, a reused BasicBuilder and Build, and the same
// Match/MatchAny answers on members and non-members.
func TestDifferentialBtcutil(t *testing.T) {
	sets := 2000
	if testing.Short() {
		sets = 300
	}
	rng := rand.New(rand.NewPCG(158, 19))
	var reused BasicBuilder
	var buf []byte
	for set := range sets {
		hash := randomHash(rng)
		elems := randomElementSet(rng)
		bf, want := btcutilBasic(t, hash, elems)

		got := BuildBasic(hash, elems)
		if !bytes.Equal(got, want) {
			t.Fatalf("set %d (%d elements): BuildBasic\n got %x\nwant %x", set, len(elems), trunc(got), trunc(want))
		}
		reused.Reset()
		for _, e := range elems {
			reused.Add(e)
		}
		buf = reused.AppendFilter(buf[:0], hash)
		if !bytes.Equal(buf, want) {
			t.Fatalf("set %d: reused BasicBuilder differs", set)
		}
		var nonEmpty [][]byte
		for _, e := range elems {
			if len(e) > 0 {
				nonEmpty = append(nonEmpty, e)
			}
		}
		key := NewSipHasher(BlockKey(hash))
		f, err := Build(BasicParams, key, nonEmpty)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(f.BytesWithN(), want) {
			t.Fatalf("set %d: Build differs", set)
		}
		if f.N() != bf.N() {
			t.Fatalf("set %d: N %d, btcutil %d", set, f.N(), bf.N())
		}

		bkey := builder.DeriveKey(&hash)
		var queries [][]byte
		for range 8 {
			if len(nonEmpty) > 0 && rng.IntN(2) == 0 {
				queries = append(queries, nonEmpty[rng.IntN(len(nonEmpty))])
			} else {
				q := make([]byte, 1+rng.IntN(34))
				for i := range q {
					q[i] = byte(rng.Uint32())
				}
				queries = append(queries, q)
			}
		}
		for i, q := range queries {
			ours, err := f.Match(key, q)
			if err != nil {
				t.Fatal(err)
			}
			theirs, err := bf.Match(bkey, q)
			if err != nil {
				t.Fatal(err)
			}
			if ours != theirs {
				t.Fatalf("set %d query %d: Match %v, btcutil %v", set, i, ours, theirs)
			}
		}
		// Query sets: all non-members, then with one member mixed in.
		var non [][]byte
		for range 1 + rng.IntN(100) {
			q := make([]byte, 22+rng.IntN(13))
			for i := range q {
				q[i] = byte(rng.Uint32())
			}
			non = append(non, q)
		}
		for _, qs := range [][][]byte{non, append(non[:len(non):len(non)], queries...)} {
			ours, err := f.MatchAny(key, qs)
			if err != nil {
				t.Fatal(err)
			}
			ours2, err := MatchBasic(want, hash, qs)
			if err != nil {
				t.Fatal(err)
			}
			theirs, err := bf.MatchAny(bkey, qs)
			if err != nil {
				t.Fatal(err)
			}
			if ours != theirs || ours2 != theirs {
				t.Fatalf("set %d: MatchAny %v / MatchBasic %v, btcutil %v", set, ours, ours2, theirs)
			}
		}
	}
}

func trunc(b []byte) []byte {
	if len(b) > 32 {
		return b[:32]
	}
	return b
}
