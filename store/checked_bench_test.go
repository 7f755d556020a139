package store

import (
	"math/rand/v2"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/wireframe"
)

// BenchmarkCheckCost is what checking one value costs on a read: the
// CRC32C of a filterheaders value and of a mainnet-sized filter with its
// checksums value, against the double SHA-256 of that filter that checking
// it against its filter hash (as Bitcoin Core does) would take.
func BenchmarkCheckCost(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	filter := make([]byte, 23_000)
	for i := range filter {
		filter[i] = byte(rng.UintN(256))
	}
	hash := chainhash.Hash{1}
	var ck wireframe.CFilterHasher
	fhv := filterHeaderValue(7, &hash, &hash)
	sumv := checksumValue(7, ck.Sum(&hash, filter), filter)
	var bk buckets
	b.Run("filter-header-crc32c", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := bk.filterHeaderAt(7, fhv); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("filter-23KB-crc32c", func(b *testing.B) {
		b.SetBytes(int64(len(filter)))
		for b.Loop() {
			if _, err := bk.checkedSum(7, sumv, filter, &hash, &ck); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("filter-23KB-dsha256", func(b *testing.B) {
		b.SetBytes(int64(len(filter)))
		for b.Loop() {
			_ = headers.FilterHash(filter)
		}
	})
	small := filter[:60]
	smallv := checksumValue(7, ck.Sum(&hash, small), small)
	b.Run("filter-60B-crc32c", func(b *testing.B) {
		for b.Loop() {
			if _, err := bk.checkedSum(7, smallv, small, &hash, &ck); err != nil {
				b.Fatal(err)
			}
		}
	})
}
