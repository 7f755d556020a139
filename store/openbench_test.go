package store

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	bolt "go.etcd.io/bbolt"
)

// BenchmarkOpenChecks measures what Open's checks of an existing file cost
// on a large store of mainnet-sized filters (25 KB): checkFile alone, the
// whole Open and Close, each with the file dropped from the page cache
// first (fadvise DONTNEED: a cold start) and warm; and, for comparison,
// bbolt's own full page walk (tx.Check), which Open does not do.
// CFINDEXD_TEST_BENCH_STORE_MB sets the store's size (default 256; mainnet's
// store is about 5,000).
func BenchmarkOpenChecks(b *testing.B) {
	mb := benchStoreMB("CFINDEXD_TEST_BENCH_STORE_MB")
	path := filepath.Join(b.TempDir(), "large.db")
	genesis := buildLargeStore(b, path, int64(mb)<<20)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("store of %d MB", fi.Size()>>20)
	checkOnly := func(b *testing.B) {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		size, _ := fileSize(f)
		if err := checkFile(f, size); err != nil {
			b.Fatal(err)
		}
	}
	openClose := func(b *testing.B) {
		s, err := Open(path, genesis, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
	for _, cold := range []bool{true, false} {
		name := "warm"
		if cold {
			name = "cold"
		}
		for _, bench := range []struct {
			name string
			fn   func(*testing.B)
		}{{"checkFile", checkOnly}, {"Open+Close", openClose}} {
			b.Run(bench.name+"/"+name, func(b *testing.B) {
				for b.Loop() {
					if cold {
						b.StopTimer()
						evictFile(b, path)
						b.StartTimer()
					}
					bench.fn(b)
				}
			})
		}
	}
	b.Run("bbolt-tx.Check/cold", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			evictFile(b, path)
			db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			err = db.View(func(tx *bolt.Tx) error {
				for err := range tx.Check() {
					return err
				}
				return nil
			})
			b.StopTimer()
			db.Close()
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
}

// buildLargeStore writes a store of about size bytes of 25 KB filters at
// path and returns its genesis hash.
func buildLargeStore(b *testing.B, path string, size int64) chainhash.Hash {
	b.Helper()
	const filterLen = 25_000
	rng := rand.NewChaCha8([32]byte{1})
	base := wire.BlockHeader{Version: 1, Timestamp: time.Unix(1_600_000_000, 0), Bits: 0x207fffff}
	return writeBenchChain(b, path, int(size/(filterLen+200)), base, func(int) []byte {
		filter := make([]byte, filterLen)
		filter[0], filter[1], filter[2] = 0xfd, 0x10, 0x27 // CompactSize 10,000 elements
		_, _ = rng.Read(filter[3:])
		return filter
	}, nil)
}
