package store

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"golang.org/x/sys/unix"
)

// benchStoreMB is the store size in MB a benchmark builds: the positive
// integer in the environment variable name, or 256.
func benchStoreMB(name string) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return 256
}

// evictFile drops the file at path from the page cache (a cold start).
func evictFile(b *testing.B, path string) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		b.Fatal(err)
	}
}

// benchBatch is how many blocks writeBenchChain commits at once.
const benchBatch = 500

// writeBenchChain writes a chain of blocks blocks to a new store at path,
// without fsync, in batches of benchBatch, and returns its genesis hash. Block h
// has base's version and bits, base's time plus h×10 minutes, nonce h, and
// the filter filter(h), which need stay valid only until its batch is
// committed; committed (if not nil) is called after each batch.
func writeBenchChain(b *testing.B, path string, blocks int, base wire.BlockHeader, filter func(h int) []byte, committed func()) chainhash.Hash {
	b.Helper()
	var (
		prev, prevFH chainhash.Hash
		genesis      chainhash.Hash
		s            *Store
	)
	recs := make([]BlockRecord, 0, benchBatch)
	for h := 0; h < blocks; h++ {
		hdr := wire.BlockHeader{Version: base.Version, PrevBlock: prev, Timestamp: base.Timestamp.Add(time.Duration(h) * 10 * time.Minute), Bits: base.Bits, Nonce: uint32(h)}
		f := filter(h)
		r := BlockRecord{Height: uint32(h), Hash: hdr.BlockHash(), Header: hdr, Filter: f, FilterHeader: filterHeader(f, prevFH)}
		if h == 0 {
			genesis = r.Hash
			var err error
			if s, err = Open(path, genesis, Options{NoSync: true}); err != nil {
				b.Fatal(err)
			}
		}
		recs = append(recs, r)
		prev, prevFH = r.Hash, r.FilterHeader
		if len(recs) == benchBatch || h == blocks-1 {
			if err := s.CommitBatch(recs); err != nil {
				b.Fatal(err)
			}
			recs = recs[:0]
			if committed != nil {
				committed()
			}
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	return genesis
}
