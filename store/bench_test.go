package store

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// BenchmarkFiltersByHeight1000 reads 1,000 consecutive filters (a full
// getcfilters answer) from a store of 3,000 blocks with ~2.5 KB filters.
// "cursor-scan" is FiltersByHeight; "point-gets" is its peer doing one
// B+tree lookup per height per bucket, for the ratio.
func BenchmarkFiltersByHeight1000(b *testing.B) {
	chain := genChainMaxN(60, nil, 3000, 2000)
	s, _ := openTest(b, chain[0].Hash)
	commitAll(b, s, chain, 500)
	const start, end = 1500, 2499

	b.Run("cursor-scan", func(b *testing.B) {
		b.ReportAllocs()
		var bytes int64
		for b.Loop() {
			recs, err := s.FiltersByHeight(start, end)
			if err != nil || len(recs) != 1000 {
				b.Fatal(err)
			}
			bytes = 0
			for i := range recs {
				bytes += int64(len(recs[i].Filter))
			}
		}
		b.SetBytes(bytes)
	})
	b.Run("point-gets", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			recs := make([]BlockRecord, end-start+1)
			err := s.view(func(bk *buckets) error {
				for i := range recs {
					r, err := bk.activeRecord(start + uint32(i))
					if err != nil {
						return err
					}
					recs[i] = r
				}
				detach(recs)
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkFilterHeadersForStop2000 reads a full getcfheaders answer.
func BenchmarkFilterHeadersForStop2000(b *testing.B) {
	chain := genChainMaxN(61, nil, 2500, 50)
	s, _ := openTest(b, chain[0].Hash)
	commitAll(b, s, chain, 500)
	stop := chain[2400].Hash
	b.ReportAllocs()
	var out []chainhash.Hash
	for b.Loop() {
		var err error
		if out, err = s.FilterHeadersForStop(stop, 401); err != nil || len(out) != 2000 {
			b.Fatal(err)
		}
	}
}

// BenchmarkCFHeaders2000 builds a full getcfheaders answer (the previous
// filter header and 2,000 filter hashes) from a store of 2,500 blocks
// whose filters average ~12.5 KB, about a mainnet block's. "filters+hash"
// is the path p2p took before filter hashes were stored: read the 2,000
// filters, hash each, read the previous header through the first block's
// parent. "filter-hashes" is FilterHashesForStop. filterB/op is the filter
// data each reads.
func BenchmarkCFHeaders2000(b *testing.B) {
	chain := genChainMaxN(62, nil, 2500, 10_000)
	s, _ := openTest(b, chain[0].Hash)
	commitAll(b, s, chain, 250)
	const start = 401
	stop := chain[2400].Hash
	want := chain[2400].FilterHeader
	check := func(b *testing.B, prev chainhash.Hash, hashes []chainhash.Hash) {
		fh := prev
		for _, h := range hashes {
			fh = chainhash.DoubleHashH(append(h[:], fh[:]...))
		}
		if len(hashes) != 2000 || fh != want {
			b.Fatal("answer does not chain to the stop's filter header")
		}
	}

	b.Run("filters+hash", func(b *testing.B) {
		b.ReportAllocs()
		var filterBytes int
		for b.Loop() {
			recs, err := s.FiltersForStop(stop, start)
			if err != nil {
				b.Fatal(err)
			}
			hdr, _, err := s.HeaderByHash(recs[0].Hash)
			if err != nil {
				b.Fatal(err)
			}
			prev, err := s.FilterHeadersForStop(hdr.PrevBlock, start-1)
			if err != nil {
				b.Fatal(err)
			}
			hashes := make([]chainhash.Hash, len(recs))
			filterBytes = 0
			for i := range recs {
				hashes[i] = chainhash.DoubleHashH(recs[i].Filter)
				filterBytes += len(recs[i].Filter)
			}
			b.StopTimer()
			check(b, prev[0], hashes)
			b.StartTimer()
		}
		b.ReportMetric(float64(filterBytes), "filterB/op")
	})
	b.Run("filter-hashes", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			prev, hashes, err := s.FilterHashesForStop(stop, start)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			check(b, prev, hashes)
			b.StartTimer()
		}
		b.ReportMetric(0, "filterB/op")
	})
}

// BenchmarkCFCheckpt1000 reads 1,000 checkpoint filter headers (mainnet
// height is ~900 checkpoints at BIP-157's interval of 1,000; here every
// 20th of 20,001 blocks, so the store stays small). "read-per-height" is
// the path p2p took before: one read transaction per checkpoint.
// "one-txn" is FilterHeaderCheckpoints.
func BenchmarkCFCheckpt1000(b *testing.B) {
	const interval = 20
	chain := genChainMaxN(63, nil, 20_001, 4)
	s, _ := openTest(b, chain[0].Hash)
	commitAll(b, s, chain, 2000)
	stop := chain[20_000].Hash

	b.Run("read-per-height", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out := make([]chainhash.Hash, 0, 1000)
			for h := uint32(interval); h <= 20_000; h += interval {
				fh, err := s.FilterHeadersByHeight(h, h)
				if err != nil {
					b.Fatal(err)
				}
				out = append(out, fh[0])
			}
			if len(out) != 1000 || out[999] != chain[20_000].FilterHeader {
				b.Fatal("wrong checkpoints")
			}
		}
	})
	b.Run("one-txn", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out, err := s.FilterHeaderCheckpoints(stop, interval)
			if err != nil || len(out) != 1000 || out[999] != chain[20_000].FilterHeader {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCommitBatch500 commits batches of 500 small blocks (80-byte
// headers, BIP-158 filters of about 5–90 bytes) on top of a store of
// 10,000 blocks, the catch-up shape of a young or test chain. The store
// is reset to a copy of the 10,000-block file every 20 batches, so it
// holds 10,000–20,000 blocks whatever b.N is; resetting is not timed.
// ns/rec and allocs/rec are per committed block.
func BenchmarkCommitBatch500(b *testing.B) {
	const batch, maxN, base, perStore = 500, 36, 10_000, 20
	chain := genChainMaxN(64, nil, base+batch*perStore, maxN)
	dir := b.TempDir()
	template := filepath.Join(dir, "template.db")
	ts, err := Open(template, chain[0].Hash, Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	commitAll(b, ts, chain[:base], batch)
	if err := ts.Close(); err != nil {
		b.Fatal(err)
	}
	raw, err := os.ReadFile(template)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "bench.db")
	var (
		s           *Store
		next        = perStore
		m0, m1      runtime.MemStats
		mallocs     uint64
		filterBytes int
		recs        int
	)
	defer func() {
		if s != nil {
			_ = s.Close()
		}
	}()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		if next == perStore {
			if s != nil {
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
			if err := os.WriteFile(path, raw, 0o600); err != nil {
				b.Fatal(err)
			}
			if s, err = Open(path, chain[0].Hash, Options{NoSync: true}); err != nil {
				b.Fatal(err)
			}
			next = 0
		}
		recsNow := chain[base+next*batch : base+(next+1)*batch]
		next++
		for i := range recsNow {
			filterBytes += len(recsNow[i].Filter)
		}
		runtime.ReadMemStats(&m0)
		b.StartTimer()
		if err := s.CommitBatch(recsNow); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		runtime.ReadMemStats(&m1)
		mallocs += m1.Mallocs - m0.Mallocs
		recs += batch
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(recs), "ns/rec")
	b.ReportMetric(float64(mallocs)/float64(recs), "allocs/rec")
	b.ReportMetric(float64(filterBytes)/float64(recs), "filterB/rec")
}
