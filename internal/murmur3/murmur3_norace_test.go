//go:build !race

package murmur3

import (
	"math/rand/v2"
	"testing"

	"github.com/spaolacci/murmur3"
)

// Our MurmurHash3-x86-32 equals spaolacci/murmur3's on every length and
// seed tried. (Excluded under -race: the library's unsafe pointer walk
// trips checkptr, which is why we carry our own.)
func TestSum32MatchesSpaolacci(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 32))
	for n := range 200 {
		data := make([]byte, n%70)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		seed := rng.Uint32()
		if n%3 == 0 {
			seed = 0
		}
		if got, want := Sum32(data, seed), murmur3.Sum32WithSeed(data, seed); got != want {
			t.Fatalf("len %d seed %d: %08x, library %08x", len(data), seed, got, want)
		}
	}
}
