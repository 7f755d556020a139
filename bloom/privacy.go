package bloom

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/btcsuite/btcd/wire/v2"
)

// The light-client spec's client-side defaults.
const (
	// DefaultFPR is the spec's target false-positive rate for a wallet's
	// filter.
	DefaultFPR = 0.0001
	// DefaultNoise is the spec's privacy noise: random elements worth 5 %
	// of the wallet's, so at least 5 % more bits are set than by the
	// wallet's elements alone.
	DefaultNoise = 0.05
	// DefaultRotationInterval is the spec's rotation: a new tweak (and new
	// noise) every 100 blocks.
	DefaultRotationInterval = 100
	// DefaultMinElements is the spec's 50 elements, read as the least a
	// wallet filter is sized for: a wallet with a handful of scripts still
	// gets a 952-bit filter, with room for the outpoints BLOOM_UPDATE_ALL
	// adds. Sized for 4 elements (72 bits), every false positive's
	// outpoint fills the filter further and the false positives cascade.
	DefaultMinElements = 50
	// noiseElementSize is the length of a noise element: a random 20-byte
	// string looks like the pubkey hashes and script hashes wallets watch.
	noiseElementSize = 20
)

// Privacy is how a wallet builds the filters it gives peers.
type Privacy struct {
	// FPR is the false-positive rate the filter is sized for, counting
	// the noise elements as elements.
	FPR float64
	// Noise is the fraction of extra random elements (0 turns noise off).
	Noise float64
	// Flags is the update mode (and reserved bits) sent in filterload.
	Flags wire.BloomUpdateType
	// MinElements is the least number of elements the filter is sized
	// for (DefaultMinElements in DefaultPrivacy; 0 sizes it for exactly
	// the elements and noise).
	MinElements int
}

// DefaultPrivacy is the spec's defaults with BLOOM_UPDATE_ALL, the mode
// that lets the peer find spends of matched outputs without a filteradd.
var DefaultPrivacy = Privacy{FPR: DefaultFPR, Noise: DefaultNoise, Flags: wire.BloomUpdateAll, MinElements: DefaultMinElements}

// Composition says what went into a wallet filter: what a peer holding it
// learns is only its bits, which these numbers relate to the wallet's
// elements.
type Composition struct {
	Elements      int     // the wallet's elements inserted
	NoiseElements int     // random elements inserted
	ElementBits   int     // bits set by the wallet's elements alone
	SetBits       int     // bits set in the filter
	Bits          int     // m
	HashFuncs     uint32  // k
	ExpectedFPR   float64 // (1 − e^(−k·n/m))^k for all n inserted
	EstimatedFPR  float64 // fill^k, what a server sees
}

// NoiseShare is the fraction of the inserted elements that are noise.
func (c Composition) NoiseShare() float64 {
	if c.Elements+c.NoiseElements == 0 {
		return 0
	}
	return float64(c.NoiseElements) / float64(c.Elements+c.NoiseElements)
}

// BuildWalletFilter builds a wallet's filter for elements (scripts' data
// pushes, outpoints, txids — whatever the wallet watches) with tweak and
// the noise of pol, drawn from rng. The filter is sized at pol.FPR for the
// elements plus the noise, or pol.MinElements if that is more. Noise
// follows AddNoise. Duplicate elements
// count once in the sizing only if the caller removes them.
func BuildWalletFilter(elements [][]byte, pol Privacy, tweak uint32, rng *rand.Rand) (*Filter, Composition, error) {
	if pol.Noise < 0 || math.IsNaN(pol.Noise) {
		return nil, Composition{}, fmt.Errorf("%w: noise %v", ErrBadParams, pol.Noise)
	}
	n := len(elements)
	planned := max(n+noiseCount(n, pol.Noise), pol.MinElements, 1)
	p, err := ParamsFor(planned, pol.FPR)
	if err != nil {
		return nil, Composition{}, err
	}
	f := New(p, tweak, pol.Flags)
	for _, e := range elements {
		f.Insert(e)
	}
	c := Composition{Elements: n, ElementBits: f.setBits(), Bits: p.Bits(), HashFuncs: p.HashFuncs}
	c.NoiseElements = f.AddNoise(rng, n, pol.Noise)
	c.SetBits = f.setBits()
	c.ExpectedFPR = ExpectedFPR(p.HashFuncs, p.Bits(), n+c.NoiseElements)
	c.EstimatedFPR = f.EstimatedFPR()
	return f, c, nil
}

// noiseCount is the least number of noise elements for n elements at
// fraction: ⌈fraction·n⌉, at least one when fraction > 0.
func noiseCount(n int, fraction float64) int {
	if fraction <= 0 {
		return 0
	}
	return max(1, int(math.Ceil(fraction*float64(n))))
}

// AddNoise inserts random 20-byte elements drawn from rng: at least
// ⌈fraction·n⌉ of them (n being how many real elements f holds), and more
// until at least (1 + fraction) times the bits set before are set — at a
// fill near ½, 5 % more elements set only about 3.5 % more bits, so the
// bit target is what guarantees the spec's "5 % more bits". It stops
// after 2·n + 64 elements if the filter is too full to reach the target.
// It returns how many it inserted; fraction ≤ 0 inserts none.
func (f *Filter) AddNoise(rng *rand.Rand, n int, fraction float64) int {
	if fraction <= 0 || len(f.data) == 0 || f.hashFuncs == 0 {
		return 0
	}
	set := f.setBits()
	target := int(math.Ceil(float64(set) * (1 + fraction)))
	least := noiseCount(n, fraction)
	limit := 2*n + 64
	var e [noiseElementSize]byte
	added := 0
	for added < limit && (added < least || set < target) {
		for i := 0; i < len(e); i += 8 {
			var w [8]byte
			binary.LittleEndian.PutUint64(w[:], rng.Uint64())
			copy(e[i:], w[:])
		}
		set += f.insertCounting(e[:])
		added++
	}
	return added
}

// Rotation derives a wallet's filter for each interval of blocks: epoch
// e covers heights [e·Interval, (e+1)·Interval), and each epoch has its
// own tweak and noise, derived from Key, so that filters of different
// epochs (and different peers, given different keys) cannot be
// intersected bit by bit to single out the wallet's elements.
type Rotation struct {
	// Interval is the epoch length in blocks (DefaultRotationInterval);
	// 0 is treated as 1.
	Interval uint32
	// Key seeds the tweaks and noise; keep it secret and random.
	Key [32]byte
}

// Epoch is the epoch of a block height.
func (r Rotation) Epoch(height uint32) uint32 { return height / max(r.Interval, 1) }

// EpochStart is the first height of epoch.
func (r Rotation) EpochStart(epoch uint32) uint32 { return epoch * max(r.Interval, 1) }

// derive is SHA256(key || label || epoch).
func (r Rotation) derive(label string, epoch uint32) [32]byte {
	h := sha256.New()
	h.Write(r.Key[:])
	h.Write([]byte(label))
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], epoch)
	h.Write(b[:])
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// Tweak is the epoch's nTweak.
func (r Rotation) Tweak(epoch uint32) uint32 {
	d := r.derive("cfindexd/bloom/tweak", epoch)
	return binary.LittleEndian.Uint32(d[:4])
}

// NoiseRand is the epoch's source of noise elements.
func (r Rotation) NoiseRand(epoch uint32) *rand.Rand {
	return rand.New(rand.NewChaCha8(r.derive("cfindexd/bloom/noise", epoch)))
}

// Filter builds the wallet's filter for epoch: BuildWalletFilter with the
// epoch's tweak and noise.
func (r Rotation) Filter(elements [][]byte, pol Privacy, epoch uint32) (*Filter, Composition, error) {
	return BuildWalletFilter(elements, pol, r.Tweak(epoch), r.NoiseRand(epoch))
}
