package headers

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// coreLocatorHeights transliterates Bitcoin Core's LocatorEntries loop
// (src/chain.cpp) with signed arithmetic, as an independent reference.
func coreLocatorHeights(tip int64) []uint32 {
	var have []uint32
	step := int64(1)
	for h := tip; ; {
		have = append(have, uint32(h))
		if h == 0 {
			break
		}
		h = max(h-step, 0)
		if len(have) > 10 {
			step *= 2
		}
	}
	return have
}

func TestLocatorHeights(t *testing.T) {
	tests := []struct {
		name string
		tip  uint32
		want []uint32
	}{
		{"genesis", 0, []uint32{0}},
		{"one", 1, []uint32{1, 0}},
		// btcd blockchain/chainview_test.go "chain0-chain1".
		{"btcd tip 4", 4, []uint32{4, 3, 2, 1, 0}},
		{"twelve dense", 11, []uint32{11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
		{"first doubling", 12, []uint32{12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
		{"thirteen", 13, []uint32{13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 0}},
		// btcd "chain1-chain2": branch1 tip at height 26.
		{"btcd tip 26", 26, []uint32{26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 13, 9, 1, 0}},
		// btcd TestChainViewNil: 50 chained nodes, tip 49.
		{"btcd tip 49", 49, []uint32{49, 48, 47, 46, 45, 44, 43, 42, 41, 40, 39, 38, 36, 32, 24, 8, 0}},
		{"tip 100", 100, []uint32{100, 99, 98, 97, 96, 95, 94, 93, 92, 91, 90, 89, 87, 83, 75, 59, 27, 0}},
		{"tip 1e6", 1_000_000, []uint32{
			1000000, 999999, 999998, 999997, 999996, 999995, 999994, 999993, 999992, 999991, 999990, 999989,
			999987, 999983, 999975, 999959, 999927, 999863, 999735, 999479, 998967, 997943, 995895,
			991799, 983607, 967223, 934455, 868919, 737847, 475703, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := LocatorHeights(tc.tip)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("LocatorHeights(%d) =\n%v\nwant\n%v", tc.tip, got, tc.want)
			}
			if ref := coreLocatorHeights(int64(tc.tip)); !slices.Equal(got, ref) {
				t.Fatalf("reference disagrees with table: %v", ref)
			}
		})
	}
}

// TestLocatorHeightsMatchCoreLoop compares against the transliterated Core
// loop for every tip up to 5000, a seeded sample of mainnet-range tips and the
// uint32 extreme, and checks the shape invariants callers rely on.
func TestLocatorHeightsMatchCoreLoop(t *testing.T) {
	tips := []uint32{1<<32 - 1, 1 << 31, 1<<31 + 1, 940_000}
	for tip := uint32(0); tip <= 5000; tip++ {
		tips = append(tips, tip)
	}
	rng := rand.New(rand.NewPCG(158, 157))
	for range 2000 {
		tips = append(tips, rng.Uint32())
	}
	for _, tip := range tips {
		got := LocatorHeights(tip)
		if want := coreLocatorHeights(int64(tip)); !slices.Equal(got, want) {
			t.Fatalf("LocatorHeights(%d) = %v, Core loop %v", tip, got, want)
		}
		if got[0] != tip || got[len(got)-1] != 0 {
			t.Fatalf("tip %d: locator %v must start at the tip and end at genesis", tip, got)
		}
		for i := 1; i < len(got); i++ {
			if got[i] >= got[i-1] {
				t.Fatalf("tip %d: not strictly decreasing at %d: %v", tip, i, got)
			}
		}
		if len(got) > 12+bitLen(tip) {
			t.Fatalf("tip %d: %d entries exceed the capacity bound %d", tip, len(got), 12+bitLen(tip))
		}
	}
}

// testChain is a fake active chain plus a stale branch, keyed by hashes that
// encode (branch, height) so tests can reason about them.
type testChain struct {
	active map[chainhash.Hash]uint32
}

func blockHash(branch byte, height uint32) chainhash.Hash {
	var h chainhash.Hash
	h[0] = branch
	binary.LittleEndian.PutUint32(h[1:], height)
	h[31] = 0xb1
	return h
}

func newTestChain(tip uint32) testChain {
	c := testChain{active: make(map[chainhash.Hash]uint32, tip+1)}
	for h := uint32(0); h <= tip; h++ {
		c.active[blockHash(0, h)] = h
	}
	return c
}

func (c testChain) heightOf(hash chainhash.Hash) (uint32, bool) {
	h, ok := c.active[hash]
	return h, ok
}

func TestLocateFork(t *testing.T) {
	chain := newTestChain(200)
	stale := func(h uint32) chainhash.Hash { return blockHash(1, h) }
	active := func(h uint32) chainhash.Hash { return blockHash(0, h) }
	tests := []struct {
		name    string
		locator []chainhash.Hash
		want    uint32
	}{
		{"empty locator means genesis", nil, 0},
		{"our tip", []chainhash.Hash{active(200)}, 200},
		{"peer behind us", []chainhash.Hash{active(150), active(149)}, 150},
		{"peer on a fork", []chainhash.Hash{stale(180), stale(179), active(170), active(160)}, 170},
		{"nothing known", []chainhash.Hash{stale(5), stale(4), {}}, 0},
		{"only genesis known", []chainhash.Hash{stale(9), active(0)}, 0},
		{"first active wins even if lower", []chainhash.Hash{active(10), active(190)}, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := LocateFork(tc.locator, chain.heightOf); got != tc.want {
				t.Fatalf("LocateFork = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestLocateForkFindsHighestCommonLocatorEntry is a property test: a peer whose
// chain shares ours up to fork and then diverges sends Core's locator for its
// tip; LocateFork must return the highest locator height <= fork, and never
// anything above the fork.
func TestLocateForkFindsHighestCommonLocatorEntry(t *testing.T) {
	const ourTip = 3000
	chain := newTestChain(ourTip)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		fork := rng.Uint32N(ourTip + 1)
		peerTip := fork + rng.Uint32N(600)
		heights := LocatorHeights(peerTip)
		locator := make([]chainhash.Hash, len(heights))
		want := uint32(0)
		found := false
		for i, h := range heights {
			if h <= fork {
				locator[i] = blockHash(0, h)
				if !found {
					want, found = h, true
				}
			} else {
				locator[i] = blockHash(2, h) // the peer's own branch
			}
		}
		got := LocateFork(locator, chain.heightOf)
		if got != want || got > fork {
			t.Fatalf("fork %d peer tip %d: LocateFork = %d, want %d", fork, peerTip, got, want)
		}
		// Core's locator is dense near the tip, so a shallow fork is found exactly.
		if peerTip-fork <= 11 && got != fork {
			t.Fatalf("fork %d peer tip %d: shallow fork located at %d", fork, peerTip, got)
		}
	}
}

// TestLocateForkArbitraryLocators checks, for random locators mixing active,
// stale and unknown hashes in any order, that the answer is the height of the
// first active entry, or genesis when there is none, and that every entry is
// looked up at most once and none after the first hit.
func TestLocateForkArbitraryLocators(t *testing.T) {
	chain := newTestChain(500)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		locator := make([]chainhash.Hash, rng.IntN(120))
		for i := range locator {
			switch rng.IntN(4) {
			case 0:
				locator[i] = blockHash(0, rng.Uint32N(501))
			case 1:
				locator[i] = blockHash(1, rng.Uint32N(501))
			default:
				binary.LittleEndian.PutUint64(locator[i][:], rng.Uint64())
			}
		}
		checkLocateFork(t, chain, locator)
	}
}

func checkLocateFork(t *testing.T, chain testChain, locator []chainhash.Hash) {
	t.Helper()
	want, wantCalls := uint32(0), len(locator)
	for i, h := range locator {
		if height, ok := chain.active[h]; ok {
			want, wantCalls = height, i+1
			break
		}
	}
	calls := 0
	got := LocateFork(locator, func(h chainhash.Hash) (uint32, bool) {
		calls++
		return chain.heightOf(h)
	})
	if got != want || calls != wantCalls {
		t.Fatalf("LocateFork = %d after %d lookups, want %d after %d", got, calls, want, wantCalls)
	}
}

// FuzzLocateFork feeds arbitrary bytes as a locator (32 bytes per hash; the
// first byte of each selects an active, stale or raw hash so the fuzzer can
// reach hits).
func FuzzLocateFork(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, 64))
	f.Add(append([]byte{0, 10, 0, 0, 0}, make([]byte, 27)...))
	chain := newTestChain(300)
	f.Fuzz(func(t *testing.T, data []byte) {
		var locator []chainhash.Hash
		for len(data) >= chainhash.HashSize {
			var h chainhash.Hash
			copy(h[:], data[:chainhash.HashSize])
			data = data[chainhash.HashSize:]
			switch h[0] % 3 {
			case 0:
				h = blockHash(0, binary.LittleEndian.Uint32(h[1:])%301)
			case 1:
				h = blockHash(1, binary.LittleEndian.Uint32(h[1:])%301)
			}
			locator = append(locator, h)
		}
		checkLocateFork(t, chain, locator)
	})
}
