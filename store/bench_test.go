package store

import (
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
