package bloom

import (
	"math/rand/v2"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// randomElements returns n distinct-with-overwhelming-probability random
// elements of length size.
func randomElements(rng *rand.Rand, n, size int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		e := make([]byte, size)
		for j := range e {
			e[j] = byte(rng.Uint32())
		}
		out[i] = e
	}
	return out
}

// The spec: a filter for n = 100 elements at p = 0.01 has a measured
// false-positive rate within 1.5× of the target over 10,000 non-members
// (fixed seed).
func TestSpecFalsePositiveRateWithinOneAndAHalfTimesTarget(t *testing.T) {
	const (
		n          = 100
		target     = 0.01
		nonMembers = 10_000
	)
	rng := rand.New(rand.NewPCG(100, 1))
	p, err := ParamsFor(n, target)
	if err != nil {
		t.Fatal(err)
	}
	f := New(p, rng.Uint32(), wire.BloomUpdateNone)
	for _, e := range randomElements(rng, n, 20) {
		f.Insert(e)
	}
	hits := 0
	for _, e := range randomElements(rng, nonMembers, 20) {
		if f.Contains(e) {
			hits++
		}
	}
	got := float64(hits) / nonMembers
	t.Logf("m=%d bits k=%d: %d of %d non-members match (%.4f; expected %.4f, server's estimate %.4f)",
		p.Bits(), p.HashFuncs, hits, nonMembers, got, p.ExpectedFPR(n), f.EstimatedFPR())
	if got > 1.5*target || got < target/1.5 {
		t.Fatalf("false-positive rate %.4f is not within 1.5× of %.2f", got, target)
	}
}

// The spec: optimal parameters for n = 50, p = 0.0001 give k in 10..15 and
// m in 800..1,200 bits.
func TestSpecOptimalParameters(t *testing.T) {
	p, err := ParamsFor(50, 0.0001)
	if err != nil {
		t.Fatal(err)
	}
	if p.HashFuncs < 10 || p.HashFuncs > 15 {
		t.Errorf("k = %d, want 10..15", p.HashFuncs)
	}
	if p.Bits() < 800 || p.Bits() > 1200 {
		t.Errorf("m = %d bits, want 800..1,200", p.Bits())
	}
	t.Logf("n=50 p=0.0001: m=%d bits (%d bytes), k=%d, expected FPR %.6f", p.Bits(), p.Size, p.HashFuncs, p.ExpectedFPR(50))
}

// The spec: no false negatives — every inserted element, outpoint and txid
// is found, for filters of every size up to the cap, with and without
// noise, and after BLOOM_UPDATE_ALL inserted outpoints on its own.
func TestSpecNoFalseNegatives(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, tc := range []struct {
		n   int
		fpr float64
	}{{1, 0.5}, {10, 0.1}, {50, 0.0001}, {200, 0.0001}, {1000, 0.001}, {20_000, 0.0001}} {
		elems := randomElements(rng, tc.n, 1+rng.IntN(60))
		f, _, err := BuildWalletFilter(elems, Privacy{FPR: tc.fpr, Noise: DefaultNoise}, rng.Uint32(), rng)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range elems {
			if !f.Contains(e) {
				t.Fatalf("n=%d fpr=%v: element %d not found", tc.n, tc.fpr, i)
			}
		}
		op := wire.OutPoint{Hash: chainhash.Hash(elemHash(rng)), Index: rng.Uint32()}
		f.InsertOutPoint(op)
		if !f.ContainsOutPoint(op) {
			t.Fatalf("n=%d: outpoint not found", tc.n)
		}
	}
	// An output the filter matched under BLOOM_UPDATE_ALL makes the spend
	// of that output match, in the same block or a later one.
	p, _ := ParamsFor(10, 0.0001)
	f := New(p, 5, wire.BloomUpdateAll)
	pkh := elemHash(rng)
	script := append(append([]byte{0x76, 0xa9, 0x14}, pkh[:20]...), 0x88, 0xac)
	pay := wire.NewMsgTx(2)
	pay.AddTxIn(wire.NewTxIn(&wire.OutPoint{Index: 1}, nil, nil))
	pay.AddTxOut(wire.NewTxOut(1, []byte{0x6a}))
	pay.AddTxOut(wire.NewTxOut(5000, script))
	f.Insert(pkh[:20])
	payID := pay.TxHash()
	if !f.MatchTxAndUpdate(pay, &payID) {
		t.Fatal("payment to a watched pubkey hash did not match")
	}
	spend := wire.NewMsgTx(2)
	spend.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: payID, Index: 1}, nil, nil))
	spend.AddTxOut(wire.NewTxOut(4000, []byte{0x51}))
	spendID := spend.TxHash()
	if !f.MatchTxAndUpdate(spend, &spendID) {
		t.Fatal("spend of the matched output did not match")
	}
}

func elemHash(rng *rand.Rand) [32]byte {
	var h [32]byte
	for i := range h {
		h[i] = byte(rng.Uint32())
	}
	return h
}

// The spec: noise sets at least 5 % more bits than the elements alone, at
// the default and at other rates, for small and large wallets.
func TestSpecNoiseSetsAtLeastFivePercentMoreBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, n := range []int{1, 5, 20, 50, 200, 1000, 10_000} {
		for _, noise := range []float64{DefaultNoise, 0.10, 0.25} {
			elems := randomElements(rng, n, 20)
			_, c, err := BuildWalletFilter(elems, Privacy{FPR: DefaultFPR, Noise: noise, Flags: wire.BloomUpdateAll}, rng.Uint32(), rng)
			if err != nil {
				t.Fatal(err)
			}
			if float64(c.SetBits) < (1+noise)*float64(c.ElementBits) {
				t.Errorf("n=%d noise=%.2f: %d bits set, elements alone %d (< %.0f%% more)",
					n, noise, c.SetBits, c.ElementBits, noise*100)
			}
			if c.NoiseElements < noiseCount(n, noise) {
				t.Errorf("n=%d noise=%.2f: %d noise elements, want at least %d", n, noise, c.NoiseElements, noiseCount(n, noise))
			}
			if n == 200 && noise == DefaultNoise {
				t.Logf("n=200: m=%d k=%d, %d noise elements (%.1f%% of inserted), bits %d → %d (+%.1f%%), expected FPR %.6f, fill^k %.6f",
					c.Bits, c.HashFuncs, c.NoiseElements, 100*c.NoiseShare(), c.ElementBits, c.SetBits,
					100*(float64(c.SetBits)/float64(c.ElementBits)-1), c.ExpectedFPR, c.EstimatedFPR)
			}
		}
	}
	// Noise 0 adds nothing.
	_, c, err := BuildWalletFilter(randomElements(rng, 50, 20), Privacy{FPR: DefaultFPR}, 1, rng)
	if err != nil {
		t.Fatal(err)
	}
	if c.NoiseElements != 0 || c.SetBits != c.ElementBits {
		t.Fatalf("noise 0 inserted %d elements", c.NoiseElements)
	}
}

// The spec: rotation changes the tweak every interval — the same within an
// interval, different in the next, and filters of consecutive epochs share
// neither tweak nor noise.
func TestSpecRotationChangesTweakEveryInterval(t *testing.T) {
	for _, interval := range []uint32{DefaultRotationInterval, 1, 7, 2016} {
		r := Rotation{Interval: interval, Key: [32]byte{1, 2, 3}}
		seen := map[uint32]uint32{}
		for height := uint32(0); height < 20*interval; height++ {
			e := r.Epoch(height)
			if e != height/interval {
				t.Fatalf("interval %d: height %d in epoch %d", interval, height, e)
			}
			if start := r.EpochStart(e); height < start || height >= start+interval {
				t.Fatalf("interval %d: height %d outside epoch %d starting %d", interval, height, e, start)
			}
			tw := r.Tweak(e)
			if height%interval != 0 {
				if prev := r.Tweak(r.Epoch(height - 1)); prev != tw {
					t.Fatalf("interval %d: tweak changed inside epoch %d at height %d", interval, e, height)
				}
				continue
			}
			if height > 0 && r.Tweak(r.Epoch(height-1)) == tw {
				t.Fatalf("interval %d: tweak did not change at height %d", interval, height)
			}
			if other, dup := seen[tw]; dup {
				t.Fatalf("interval %d: epochs %d and %d share tweak %#x", interval, other, e, tw)
			}
			seen[tw] = e
		}
	}
	r := Rotation{Interval: DefaultRotationInterval, Key: [32]byte{9}}
	elems := randomElements(rand.New(rand.NewPCG(1, 2)), 50, 20)
	f0, c0, err := r.Filter(elems, DefaultPrivacy, 0)
	if err != nil {
		t.Fatal(err)
	}
	f1, _, err := r.Filter(elems, DefaultPrivacy, 1)
	if err != nil {
		t.Fatal(err)
	}
	again, _, _ := r.Filter(elems, DefaultPrivacy, 0)
	if string(f0.Bytes()) != string(again.Bytes()) || f0.Tweak() != again.Tweak() {
		t.Fatal("the same epoch gave two different filters")
	}
	if f0.Tweak() == f1.Tweak() || string(f0.Bytes()) == string(f1.Bytes()) {
		t.Fatal("consecutive epochs gave the same tweak or bits")
	}
	if other := (Rotation{Interval: DefaultRotationInterval, Key: [32]byte{10}}); other.Tweak(0) == r.Tweak(0) {
		t.Fatal("two keys gave the same tweak")
	}
	if c0.NoiseElements == 0 {
		t.Fatal("default privacy added no noise")
	}
}
