package indexer

import (
	"bytes"
	"compress/bzip2"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Real mainnet data shipped in two modules go.mod already requires:
//   - btcd's blockchain/testdata/blk_0_to_14131.dat: a Bitcoin Core blk*.dat
//     file, uncompressed, records of [4-byte magic][4-byte LE length][block],
//     then zero padding (Core preallocates blk files);
//   - neutrino's testdata/filter-headers-mainnet-1-100_000.bz2: neutrino's
//     chainimport format, a 10-byte header (LE magic, version 0, header type
//     1 = regular filter, LE start height) then one 32-byte filter header per
//     height in internal byte order.
const (
	mainnetBlocksFile        = "blockchain/testdata/blk_0_to_14131.dat"
	mainnetFilterHeadersFile = "testdata/filter-headers-mainnet-1-100_000.bz2"
	neutrinoImportMetaSize   = 10
	neutrinoRegularFilter    = 1
)

// moduleDir asks the go command where a required module lives in the module
// cache. go test puts its own go first on PATH, so this is the same toolchain.
func moduleDir(tb testing.TB, module string) string {
	tb.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	if err != nil {
		tb.Fatalf("go list -m %s: %v", module, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		tb.Fatalf("module %s is not in the module cache (run go mod download %s)", module, module)
	}
	return dir
}

// loadMainnetBlocks returns the blocks of btcd's blk_0_to_14131.dat in height
// order, index = height. A blk file stores blocks in arrival order, so the
// chain is rebuilt by prev-hash links from genesis rather than trusted.
func loadMainnetBlocks(tb testing.TB) []*wire.MsgBlock {
	tb.Helper()
	path := filepath.Join(moduleDir(tb, "github.com/btcsuite/btcd"), mainnetBlocksFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("read %s: %v", path, err)
	}

	byPrev := make(map[chainhash.Hash]*wire.MsgBlock)
	var genesis *wire.MsgBlock
	records := 0
	for rest := raw; len(rest) >= 8; records++ {
		magic := binary.LittleEndian.Uint32(rest)
		if magic != uint32(wire.MainNet) {
			if magic != 0 {
				tb.Fatalf("record %d: magic %#x, want mainnet", records, magic)
			}
			break // preallocated zero tail
		}
		size := binary.LittleEndian.Uint32(rest[4:])
		if uint64(size) > uint64(len(rest)-8) {
			tb.Fatalf("record %d: length %d overruns the file", records, size)
		}
		var block wire.MsgBlock
		r := bytes.NewReader(rest[8 : 8+size])
		if err := block.Deserialize(r); err != nil || r.Len() != 0 {
			tb.Fatalf("record %d: decode block: %v (%d bytes left)", records, err, r.Len())
		}
		prev := block.Header.PrevBlock
		if prev == (chainhash.Hash{}) {
			genesis = &block
		} else if other, dup := byPrev[prev]; dup {
			tb.Fatalf("blocks %s and %s both extend %s", other.BlockHash(), block.BlockHash(), prev)
		}
		byPrev[prev] = &block
		rest = rest[8+size:]
	}
	if genesis == nil {
		tb.Fatal("no genesis block in blk file")
	}

	blocks := make([]*wire.MsgBlock, 0, records)
	for b := genesis; b != nil; b = byPrev[b.BlockHash()] {
		blocks = append(blocks, b)
	}
	if len(blocks) != records {
		tb.Fatalf("%d of %d blocks connect to genesis", len(blocks), records)
	}
	return blocks
}

// loadNeutrinoFilterHeaders returns neutrino's first count mainnet basic
// filter headers, index = height. Only the needed prefix is decompressed:
// bzip2 is the slowest step of the mainnet test.
func loadNeutrinoFilterHeaders(tb testing.TB, count int) []chainhash.Hash {
	tb.Helper()
	path := filepath.Join(moduleDir(tb, "github.com/lightninglabs/neutrino"), mainnetFilterHeadersFile)
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
