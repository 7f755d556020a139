package murmur3

import (
	"math/rand/v2"
	"testing"

	"github.com/btcsuite/btcd/btcutil/v2/bloom"
)

// The MurmurHash3 vectors Bitcoin Core's hash tests pin for BIP-37 (seeds 0,
// 0xfba4c795 = the nHashNum multiplier, 0xffffffff; every tail length).
func TestSum32Vectors(t *testing.T) {
	for _, tc := range []struct {
		seed uint32
		data []byte
		want uint32
	}{
		{0x00000000, []byte{}, 0x00000000},
		{0xfba4c795, []byte{}, 0x6a396f08},
		{0xffffffff, []byte{}, 0x81f16f39},
		{0x00000000, []byte{0x00}, 0x514e28b7},
		{0xfba4c795, []byte{0x00}, 0xea3f0b17},
		{0x00000000, []byte{0xff}, 0xfd6cf10d},
		{0x00000000, []byte{0x00, 0x11}, 0x16c6b7ab},
		{0x00000000, []byte{0x00, 0x11, 0x22}, 0x8eb51c3d},
		{0x00000000, []byte{0x00, 0x11, 0x22, 0x33}, 0xb4471bf8},
		{0x00000000, []byte{0x00, 0x11, 0x22, 0x33, 0x44}, 0xe2301fa8},
		{0x00000000, []byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55}, 0xfc2e4a15},
		{0x00000000, []byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66}, 0xb074502c},
		{0x00000000, []byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77}, 0x8034d2a0},
		{0x00000000, []byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88}, 0xb4698def},
	} {
		if got := Sum32(tc.data, tc.seed); got != tc.want {
			t.Errorf("Sum32(%x, %#x) = %#08x, want %#08x", tc.data, tc.seed, got, tc.want)
		}
	}
}

// Sum32 equals btcutil's BIP-37 MurmurHash3 (pure Go, so this runs under
// -race too) on random inputs of every tail length.
func TestSum32MatchesBtcutil(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 1))
	for n := range 500 {
		data := make([]byte, n%90)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		seed := rng.Uint32()
		if got, want := Sum32(data, seed), bloom.MurmurHash3(seed, data); got != want {
			t.Fatalf("len %d seed %#x: %#08x, btcutil %#08x", len(data), seed, got, want)
		}
	}
}

func TestSum32DoesNotAllocate(t *testing.T) {
	data := make([]byte, 37)
	if n := testing.AllocsPerRun(100, func() { _ = Sum32(data, 7) }); n != 0 {
		t.Fatalf("Sum32 allocates %v times", n)
	}
}
