package indexer

import (
	"compress/bzip2"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/testvectors"
)

// Real mainnet data shipped in two modules go.mod already requires: btcd's
// blk_0_to_14131.dat (testvectors.MainnetBlocks) and neutrino's
// testdata/filter-headers-mainnet-1-100_000.bz2, neutrino's chainimport
// format: a 10-byte header (LE magic, version 0, header type 1 = regular
// filter, LE start height) then one 32-byte filter header per height in
// internal byte order.
const (
	mainnetFilterHeadersFile = "testdata/filter-headers-mainnet-1-100_000.bz2"
	neutrinoImportMetaSize   = 10
	neutrinoRegularFilter    = 1
)

// loadNeutrinoFilterHeaders returns neutrino's first count mainnet basic
// filter headers, index = height. Only the needed prefix is decompressed:
// bzip2 is the slowest step of the mainnet test.
func loadNeutrinoFilterHeaders(tb testing.TB, count int) []chainhash.Hash {
	tb.Helper()
	path := filepath.Join(testvectors.ModuleDir(tb, "github.com/lightninglabs/neutrino"), mainnetFilterHeadersFile)
	f, err := os.Open(path)
	if err != nil {
		tb.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	r := bzip2.NewReader(f)

	var meta [neutrinoImportMetaSize]byte
	if _, err := io.ReadFull(r, meta[:]); err != nil {
		tb.Fatalf("%s: read metadata: %v", path, err)
	}
	magic := binary.LittleEndian.Uint32(meta[:])
	version, kind := meta[4], meta[5]
	start := binary.LittleEndian.Uint32(meta[6:])
	if magic != uint32(wire.MainNet) || version != 0 || kind != neutrinoRegularFilter || start != 0 {
		tb.Fatalf("%s: metadata magic %#x version %d type %d start %d, want mainnet/0/1/0",
			path, magic, version, kind, start)
	}

	out := make([]chainhash.Hash, count)
	for i := range out {
		if _, err := io.ReadFull(r, out[i][:]); err != nil {
			tb.Fatalf("%s: header at height %d: %v", path, i, err)
		}
	}
	return out
}
