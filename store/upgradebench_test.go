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

// BenchmarkUpgradeSchema1 measures the upgrade of a mainnet-shaped store
// written by schema 1: filters growing with height from 200 bytes to
// 11 KB (5.6 KB on average, as mainnet's 5 GB over 900,000 blocks), of
// CFINDEXD_BENCH_STORE_MB megabytes in all (default 256; mainnet's is
// about 5,000). For the file out of the page cache (cold) and in it
// (warm) it reports the upgrade transaction at Open, the background
// backfill of every checksum to its end (what a one-time upgrade at Open
// would take instead), and what the checksums add to the file.
func BenchmarkUpgradeSchema1(b *testing.B) {
	mb := benchStoreMB("CFINDEXD_BENCH_STORE_MB")
	path := filepath.Join(b.TempDir(), "mainnet-shaped.db")
	start := time.Now()
	genesis, blocks := buildMainnetShapedStore(b, path, int64(mb)<<20)
	b.Logf("built a store of %d blocks, %d MB, in %s", blocks, fileMB(b, path), time.Since(start).Round(time.Second))
	for _, cold := range []bool{true, false} {
		name := "warm"
		if cold {
			name = "cold"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				downgradeToV1(b, path)
				before := fileMB(b, path)
				if cold {
					evictFile(b, path)
				} else {
					warmFile(b, path)
				}
				done := make(chan struct{})
				hook := func(phase string, next uint32) {
					if phase == "write" && next >= uint32(blocks) {
						close(done)
					}
				}
				b.StartTimer()
				t0 := time.Now()
				s, err := Open(path, genesis, Options{backfillHook: hook})
				if err != nil {
					b.Fatal(err)
				}
				opened := time.Since(t0)
				<-done
				backfill := time.Since(t0) - opened
				b.StopTimer()
				st, err := s.ChecksumBackfill()
				if err != nil || st.Pending || st.Err != nil {
					b.Fatalf("backfill: %+v %v", st, err)
				}
				var stats bolt.BucketStats
				_ = s.db.View(func(tx *bolt.Tx) error {
					stats = tx.Bucket(bucketChecksums).Stats()
					return nil
				})
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(opened.Microseconds())/1e3, "open-ms")
				b.ReportMetric(backfill.Seconds(), "backfill-s")
				b.ReportMetric(float64(mb)/backfill.Seconds(), "backfill-MB/s")
				b.ReportMetric(float64(stats.LeafInuse+stats.BranchInuse)/(1<<20), "checksums-MiB")
				b.ReportMetric(float64(fileMB(b, path)-before), "file-growth-MB")
				b.StartTimer()
			}
		})
	}
}

// fileMB is the size of the file at path in MB.
func fileMB(b *testing.B, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size() >> 20
}

// warmFile reads the file at path once so that it is in the page cache.
func warmFile(b *testing.B, path string) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Read(buf); err != nil {
			return
		}
	}
}

// buildMainnetShapedStore writes a schema-2 store of about size bytes at
// path whose filters grow linearly with height from 200 bytes to 11 KB
// (the average 5.6 KB of mainnet's 5 GB over 900,000 blocks) and returns
// its genesis hash and number of blocks.
func buildMainnetShapedStore(b *testing.B, path string, size int64) (chainhash.Hash, int) {
	b.Helper()
	const minLen, maxLen = 200, 11_000
	blocks := int(size / ((minLen+maxLen)/2 + 200))
	rng := rand.NewChaCha8([32]byte{2})
	random := make([]byte, maxLen+4096)
	// A batch's filters share one arena, reused once it is committed.
	arena := make([]byte, 0, benchBatch*maxLen)
	base := wire.BlockHeader{Version: 1, Timestamp: time.Unix(1_231_006_505, 0), Bits: 0x1d00ffff}
	genesis := writeBenchChain(b, path, blocks, base, func(h int) []byte {
		n := minLen + (maxLen-minLen)*h/max(blocks-1, 1)
		if h%64 == 0 {
			_, _ = rng.Read(random)
		}
		off := h % 4096
		filter := append(arena[len(arena):], 0xfd, byte(n/3), byte(n/3>>8))
		filter = append(filter, random[off:off+n-3]...)
		arena = arena[:len(arena)+len(filter)]
		return filter
	}, func() { arena = arena[:0] })
	return genesis, blocks
}
