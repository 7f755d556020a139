package knownhashes

import (
	"encoding/binary"
	"math"
	"testing"
)

func TestBloomParams(t *testing.T) {
	tests := []struct {
		n int
		p float64
		m uint64
		k int
	}{
		// m = ⌈−n·ln p / (ln 2)²⌉, k = round(m/n · ln 2)
		{1000, 0.01, 9586, 7},
		{1000, 0.001, 14378, 10},
		{100, 0.5, 145, 1},
	}
	for _, tc := range tests {
		m, k := bloomParams(tc.n, tc.p)
		if m != tc.m || k != tc.k {
			t.Errorf("bloomParams(%d, %v) = %d, %d; want %d, %d", tc.n, tc.p, m, k, tc.m, tc.k)
		}
		if want := uint64(math.Ceil(-float64(tc.n) * math.Log(tc.p) / (math.Ln2 * math.Ln2))); m != want {
			t.Errorf("m %d, formula %d", m, want)
		}
	}
}

func TestBloomFalsePositiveRate(t *testing.T) {
	const n, nonMembers = 1000, 10_000
	b := newBloomFilter(n, 0.01, 0x0123456789abcdef, 0xfedcba9876543210)
	item := func(i uint64) []byte {
		var h [32]byte // shaped like a block hash
		binary.LittleEndian.PutUint64(h[:], i*0x9e3779b97f4a7c15)
		binary.LittleEndian.PutUint64(h[24:], i)
		return h[:]
	}
	for i := uint64(0); i < n; i++ {
		b.Add(item(i))
	}
	for i := uint64(0); i < n; i++ {
		if !b.Has(item(i)) {
			t.Fatalf("false negative for member %d", i)
		}
	}
	fp := 0
	for i := uint64(n); i < n+nonMembers; i++ {
		if b.Has(item(i)) {
			fp++
		}
	}
	rate := float64(fp) / nonMembers
	t.Logf("observed false-positive rate %.4f (%d of %d) at n=%d, p=0.01", rate, fp, nonMembers, n)
	if rate >= 0.015 {
		t.Fatalf("false-positive rate %.4f ≥ 1.5%%", rate)
	}
}

func TestRollingBloomKeepsRecentItems(t *testing.T) {
	r := NewRolling(100, 0.01, 1, 2)
	key := func(i int) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(i)) }
	for i := 0; i < 1000; i++ {
		r.Add(key(i))
		// The last n items are always remembered.
		for j := max(0, i-99); j <= i; j++ {
			if !r.Has(key(j)) {
				t.Fatalf("after %d adds, item %d forgotten", i+1, j)
			}
		}
	}
}
