package store

import (
	"encoding/binary"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// BenchmarkHeaders2000 reads a full getheaders answer (2,000 active
// headers) three ways, so one run gives the ratios that chose how block
// headers are checked (checked.go): "unchecked" decodes the stored values
// as schema 3 did; "crc32c" also checks the CRC32C of each 112-byte hash
// and header, the check schema 4 chose; "blockhash" instead hashes each
// header (double SHA-256 of 80 bytes) and compares it with the stored
// block hash. "Headers" is the store's checked read.
func BenchmarkHeaders2000(b *testing.B) {
	chain := genChainMaxN(64, nil, 2500, 4)
	s, _ := openTest(b, chain[0].Hash)
	commitAll(b, s, chain, 500)
	const start, end = 401, 2400
	read := func(b *testing.B, check func(h uint32, v []byte) bool) {
		b.ReportAllocs()
		for b.Loop() {
			out := make([]wire.BlockHeader, end-start+1)
			err := s.view(func(bk *buckets) error {
				return eachHeight(bk.headers, start, len(out), bk.missingHeader, func(h uint32, v []byte) (err error) {
					if !check(h, v) {
						b.Fatalf("height %d fails its check", h)
					}
					out[h-start] = decodeHeader(v[hashLen : hashLen+headerLen])
					return nil
				})
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("unchecked", func(b *testing.B) {
		read(b, func(uint32, []byte) bool { return true })
	})
	b.Run("crc32c", func(b *testing.B) {
		read(b, func(h uint32, v []byte) bool {
			return binary.BigEndian.Uint32(v[headerValueLenV3:]) == valueCRC(h, v[:headerValueLenV3])
		})
	})
	b.Run("blockhash", func(b *testing.B) {
		read(b, func(_ uint32, v []byte) bool {
			return chainhash.DoubleHashH(v[hashLen:headerValueLenV3]) == chainhash.Hash(v[:hashLen])
		})
	})
	b.Run("Headers", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if hs, err := s.Headers(start, end); err != nil || len(hs) != end-start+1 {
				b.Fatal(err)
			}
		}
	})
}
