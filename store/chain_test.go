package store

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// testSeed fixes every random choice in this package's tests.
const testSeed = 0x5eed_cf1d

// genBlock returns the block at height on top of prev: a header chained by
// PrevBlock, a BIP-158-shaped filter (CompactSize N, then random bytes of
// about 20 bits per element), its filter hash and the BIP-157 filter header
// over prevFH.
// The same (branch, height, prev) always gives the same block.
func genBlock(branch uint64, height uint32, prev, prevFH chainhash.Hash, maxN int) BlockRecord {
	rng := rand.New(rand.NewPCG(testSeed^branch, uint64(height)<<32|uint64(prev[0])<<8|uint64(prev[1])))
	hdr := wire.BlockHeader{
		Version:   0x20000000,
		PrevBlock: prev,
		Timestamp: time.Unix(1_600_000_000+int64(height)*600+int64(branch), 0),
		Bits:      0x207fffff,
		Nonce:     rng.Uint32(),
	}
	for i := range hdr.MerkleRoot {
		hdr.MerkleRoot[i] = byte(rng.UintN(256))
	}
	n := 1 + rng.IntN(maxN)
	filter := wirescan.AppendCompactSize(nil, uint64(n))
	body := make([]byte, (n*20+7)/8)
	for i := range body {
		body[i] = byte(rng.UintN(256))
	}
	filter = append(filter, body...)
	return BlockRecord{
		Height:       height,
		Hash:         hdr.BlockHash(),
		Header:       hdr,
		Filter:       filter,
		FilterHeader: filterHeader(filter, prevFH),
		FilterHash:   chainhash.DoubleHashH(filter),
	}
}

// filterHeader is BIP-157's dSHA256(dSHA256(filter) || prev).
func filterHeader(filter []byte, prev chainhash.Hash) chainhash.Hash {
	fh := chainhash.DoubleHashH(filter)
	return chainhash.DoubleHashH(append(fh[:], prev[:]...))
}

// genChain returns n blocks of branch above parent, or from a genesis
// block at height 0 when parent is nil.
func genChain(branch uint64, parent *BlockRecord, n int) []BlockRecord {
	return genChainMaxN(branch, parent, n, 250)
}

func genChainMaxN(branch uint64, parent *BlockRecord, n, maxN int) []BlockRecord {
	out := make([]BlockRecord, 0, n)
	var (
		height       uint32
		prev, prevFH chainhash.Hash
	)
	if parent != nil {
		height, prev, prevFH = parent.Height+1, parent.Hash, parent.FilterHeader
	}
	for i := 0; i < n; i++ {
		r := genBlock(branch, height, prev, prevFH, maxN)
		out = append(out, r)
		height, prev, prevFH = r.Height+1, r.Hash, r.FilterHeader
	}
	return out
}

// openTest opens a store in a fresh temporary directory.
func openTest(t testing.TB, genesis chainhash.Hash) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "filters.db")
	s, err := Open(path, genesis, Options{NoSync: true, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, path
}

// commitAll commits recs in batches of size.
func commitAll(t testing.TB, s *Store, recs []BlockRecord, size int) {
	t.Helper()
	for i := 0; i < len(recs); i += size {
		if err := s.CommitBatch(recs[i:min(i+size, len(recs))]); err != nil {
			t.Fatalf("CommitBatch at %d: %v", recs[i].Height, err)
		}
	}
}

// diffRecord reports the first difference between two records, or "".
func diffRecord(got, want BlockRecord) string {
	switch {
	case got.Height != want.Height:
		return "height"
	case got.Hash != want.Hash:
		return "hash"
	case got.Header.BlockHash() != want.Hash || !got.Header.Timestamp.Equal(want.Header.Timestamp) || got.Header.PrevBlock != want.Header.PrevBlock:
		return "header"
	case !bytes.Equal(got.Filter, want.Filter):
		return "filter"
	case got.FilterHeader != want.FilterHeader:
		return "filter header"
	case got.FilterHash != want.FilterHash:
		return "filter hash"
	}
	return ""
}

func checkRecords(t *testing.T, what string, got, want []BlockRecord) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d records, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := diffRecord(got[i], want[i]); d != "" {
			t.Fatalf("%s: record %d (height %d): %s differs", what, i, want[i].Height, d)
		}
	}
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("%s: unexpected error %v", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

func tipOf(r BlockRecord) Tip {
	return Tip{Height: r.Height, Hash: r.Hash, FilterHeader: r.FilterHeader}
}
