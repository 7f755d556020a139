package gcs

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

func randItems(rng *rand.Rand, n, minLen, maxLen int) [][]byte {
	items := make([][]byte, n)
	for i := range items {
		b := make([]byte, minLen+rng.IntN(maxLen-minLen+1))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		items[i] = b
	}
	return items
}

// No member is ever missed, for every hash family and a spread of (P, M),
// through Build, the wire round trip, Match and MatchAny; and the fast
// codec agrees with the bit-at-a-time reference.
func TestNoFalseNegatives(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	hashers := []Hasher{NewSipHasher([16]byte{1, 2, 3}), CashuNUT25Hasher{}, CashuNUT23Hasher{}}
	for round := range 300 {
		p := Params{P: uint8(1 + rng.IntN(32))}
		// Mostly M/2^P small (short unary parts); every fourth round
		// long quotients that cross the 64-bit reader's window.
		spread := uint64(8)
		if round%4 == 0 {
			spread = 256
		}
		p.M = 1 + rng.Uint64N(min(uint64(1)<<p.P*spread, MaxM))
		h := hashers[round%len(hashers)]
		items := randItems(rng, rng.IntN(600), 0, 40)
		f, err := Build(p, h, items)
		if err != nil {
			t.Fatal(err)
		}
		g, err := NewFilterWithN(p, f.BytesWithN())
		if err != nil {
			t.Fatalf("round %d %+v: own filter rejected: %v", round, p, err)
		}
		vals, ok := refDecode(g.N(), p.P, g.Bytes())
		if !ok || !bytes.Equal(refEncode(vals, p.P), g.Bytes()) {
			t.Fatalf("round %d %+v: reference codec disagrees", round, p)
		}
		for i, it := range items {
			if ok, _ := g.Match(h, it); !ok {
				t.Fatalf("round %d %+v: member %d missed", round, p, i)
			}
		}
		if len(items) > 0 {
			sub := make([][]byte, 0, 5)
			sub = append(sub, randItems(rng, 4, 1, 8)...)
			sub = append(sub, items[rng.IntN(len(items))])
			rng.Shuffle(len(sub), func(i, j int) { sub[i], sub[j] = sub[j], sub[i] })
			if ok, _ := g.MatchAny(h, sub); !ok {
				t.Fatalf("round %d: MatchAny missed a member", round)
			}
		}
	}
}

// With P=6, M=64, N=1,000 the observed false-positive rate over 200,000
// non-members is within 1/M·[0.7, 1.3].
func TestFalsePositiveRate(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 64))
	p := Params{P: 6, M: 64}
	h := NewSipHasher([16]byte{9})
	members := make([][]byte, 1000)
	for i := range members {
		members[i] = binary.BigEndian.AppendUint64([]byte{'m'}, uint64(i))
	}
	f, err := Build(p, h, members)
	if err != nil {
		t.Fatal(err)
	}
	const trials = 200000
	hits := 0
	q := make([]byte, 9)
	for range trials {
		q[0] = 'x' // never a member's prefix
		binary.BigEndian.PutUint64(q[1:], rng.Uint64())
		if ok, _ := f.Match(h, q); ok {
			hits++
		}
	}
	rate := float64(hits) / trials
	lo, hi := 0.7/64, 1.3/64
	t.Logf("FPR %.5f (1/M = %.5f)", rate, 1.0/64)
	if rate < lo || rate > hi {
		t.Fatalf("FPR %.5f outside [%.5f, %.5f]", rate, lo, hi)
	}
}

// collidingHasher sends every item to one of a few hashes, forcing 64-bit
// collisions between different items.
type collidingHasher struct{}

func (collidingHasher) Hash64(item []byte) uint64 { return uint64(len(item)%3) << 62 }

// Distinct items whose 64-bit hashes collide all count towards N; repeats
// do not; a long run of one repeated element costs nothing special.
func TestDedupCollisions(t *testing.T) {
	items := [][]byte{
		{1}, {2}, {1}, {3}, {}, {}, {1, 1, 1, 1}, {2}, {4, 4, 4, 4}, {1, 1, 1, 1}, {9},
	}
	// Distinct: {1} {2} {3} {} {1,1,1,1} {4,4,4,4} {9} = 7
	f, err := Build(BasicParams, collidingHasher{}, items)
	if err != nil {
		t.Fatal(err)
	}
	if f.N() != 7 {
		t.Fatalf("N = %d, want 7", f.N())
	}
	vals, ok := refDecode(f.N(), BasicP, f.Bytes())
	if !ok {
		t.Fatal("undecodable")
	}
	// Each distinct item contributes one value; items in one hash class
	// share it, so the stream repeats values (deltas of zero).
	want := map[uint64]int{}
	for _, it := range [][]byte{{1}, {2}, {3}, {}, {1, 1, 1, 1}, {4, 4, 4, 4}, {9}} {
		want[HashToRange(collidingHasher{}.Hash64(it), uint64(7)*BasicM)]++
	}
	got := map[uint64]int{}
	for _, v := range vals {
		got[v]++
	}
	if len(got) != len(want) {
		t.Fatalf("values %v, want %v", got, want)
	}
	for k, c := range want {
		if got[k] != c {
			t.Fatalf("value %d ×%d, want ×%d", k, got[k], c)
		}
	}

	// 50,000 copies of one script and one other: N = 2.
	var b BasicBuilder
	for range 50000 {
		b.Add([]byte("same script"))
	}
	b.Add([]byte("other"))
	g, err := NewFilterWithN(BasicParams, b.AppendFilter(nil, chainhash.Hash{}))
	if err != nil || g.N() != 2 {
		t.Fatalf("N=%d err=%v, want 2", g.N(), err)
	}
}

// The bucket sort orders like a comparison sort, including when many keys
// share their top bits (one big bucket).
func TestSorter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{0, 1, 2, 15, 16, 17, 32, 33, 100, 255, 256, 257, 1000, 20000} {
		for _, mask := range []uint64{^uint64(0), 0xffff, 0xffffffff00000000, 0x80000000ffffffff} {
			recs := make([]hashRec, n)
			for i := range recs {
				recs[i] = hashRec{h: rng.Uint64() & mask, idx: uint32(i)}
			}
			want := slices.Clone(recs)
			slices.SortStableFunc(want, cmpRec)
			var s sorter
			recs = s.sort(recs)
			for i := range recs {
				if recs[i].h != want[i].h {
					t.Fatalf("n=%d mask=%x: position %d: %x, want %x", n, mask, i, recs[i].h, want[i].h)
				}
			}
		}
	}
}

// A reused BasicBuilder allocates only the output, and nothing when dst
// has room.
func TestBasicBuilderAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under -race")
	}
	hash, elems := benchBlock()
	var b BasicBuilder
	build := func(dst []byte) []byte {
		b.Reset()
		for _, e := range elems {
			b.Add(e)
		}
		return b.AppendFilter(dst, hash)
	}
	out := build(nil)
	if a := testing.AllocsPerRun(20, func() { _ = build(nil) }); a > 1 {
		t.Errorf("AppendFilter(nil): %.1f allocs, want ≤ 1", a)
	}
	buf := make([]byte, 0, 2*len(out))
	if a := testing.AllocsPerRun(20, func() { buf = build(buf[:0]) }); a != 0 {
		t.Errorf("AppendFilter(dst with room): %.1f allocs, want 0", a)
	}
	if !bytes.Equal(buf, out) {
		t.Fatal("reuse changed the filter")
	}
	f, err := NewFilterWithN(BasicParams, out)
	if err != nil {
		t.Fatal(err)
	}
	var h Hasher = NewSipHasher(BlockKey(hash))
	qs := randItems(rand.New(rand.NewPCG(3, 3)), 100, 22, 34)
	if a := testing.AllocsPerRun(20, func() { _, _ = f.MatchAny(h, qs) }); a != 0 {
		t.Errorf("MatchAny: %.1f allocs, want 0", a)
	}
}

// The empty set: N=0 is the single byte 0x00, matches nothing.
func TestEmptyFilter(t *testing.T) {
	if got := BuildBasic(chainhash.Hash{}, [][]byte{{}, {}}); !bytes.Equal(got, []byte{0}) {
		t.Fatalf("BuildBasic(only empty) = %x", got)
	}
	f, err := Build(CashuParams, CashuNUT25Hasher{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.N() != 0 || len(f.Bytes()) != 0 || !bytes.Equal(f.BytesWithN(), []byte{0}) {
		t.Fatalf("empty Build: N=%d bytes=%x", f.N(), f.BytesWithN())
	}
	if ok, _ := f.Match(CashuNUT25Hasher{}, nil); ok {
		t.Fatal("empty filter matched")
	}
	if ok, err := MatchBasic([]byte{0}, chainhash.Hash{}, [][]byte{{1}}); ok || err != nil {
		t.Fatalf("MatchBasic(empty) = %v, %v", ok, err)
	}
}

// N round trips at every CompactSize boundary through the package's
// reader (wirescan's, with its errors mapped).
func TestCompactSize(t *testing.T) {
	for _, v := range []uint64{0, 0xfc, 0xfd, 0xffff, 0x10000, 0xffffffff, 0x100000000, ^uint64(0)} {
		b := wirescan.AppendCompactSize(nil, v)
		if len(b) != wirescan.CompactSizeLen(v) {
			t.Fatalf("%d: len %d, want %d", v, len(b), wirescan.CompactSizeLen(v))
		}
		got, n, err := readCompactSize(append(b, 0xaa))
		if err != nil || got != v || n != len(b) {
			t.Fatalf("%d: got %d, %d, %v", v, got, n, err)
		}
	}
}

// A Filter is read by many goroutines at once (run with -race).
func TestConcurrentReaders(t *testing.T) {
	hash, elems := benchBlock()
	f, err := NewFilterWithN(BasicParams, BuildBasic(hash, elems))
	if err != nil {
		t.Fatal(err)
	}
	var h Hasher = NewSipHasher(BlockKey(hash))
	done := make(chan error, 4)
	for g := range 4 {
		go func() {
			for i := g; i < len(elems); i += 97 {
				if ok, _ := f.Match(h, elems[i]); !ok {
					done <- fmt.Errorf("member %d missed", i)
					return
				}
				if ok, _ := f.MatchAny(h, elems[i:i+1]); !ok {
					done <- fmt.Errorf("member %d missed by MatchAny", i)
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// MatchAny with many queries (past the on-stack buffer and into the bucket
// sort) answers as the OR of single Matches, for both hasher paths.
func TestMatchAnyManyQueries(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	items := randItems(rng, 3000, 1, 40)
	for _, h := range []Hasher{NewSipHasher([16]byte{5}), CashuNUT23Hasher{}} {
		f, err := Build(BasicParams, h, items)
		if err != nil {
			t.Fatal(err)
		}
		for _, nq := range []int{129, 300, 5000} {
			qs := randItems(rng, nq, 1, 40)
			want := false
			for _, q := range qs {
				ok, _ := f.Match(h, q)
				want = want || ok
			}
			if got, _ := f.MatchAny(h, qs); got != want {
				t.Fatalf("%d queries: MatchAny %v, OR of Match %v", nq, got, want)
			}
			qs[rng.IntN(nq)] = items[rng.IntN(len(items))]
			if got, _ := f.MatchAny(h, qs); !got {
				t.Fatalf("%d queries: member missed", nq)
			}
		}
	}
	var b BasicBuilder
	b.Add(nil)
	b.Add([]byte{1})
	b.Add([]byte{1})
	if b.Len() != 2 {
		t.Fatalf("Len = %d, want 2 (empty ignored, repeats counted)", b.Len())
	}
}
