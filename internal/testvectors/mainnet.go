package testvectors

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

// btcdModule ships the mainnet blocks in its blockchain/testdata.
const btcdModule = "github.com/btcsuite/btcd"

// ModuleDir asks the go command where a module the go.mod requires lives in
// the module cache (go test puts its own go first on PATH, so this is the
// same toolchain).
func ModuleDir(tb testing.TB, module string) string {
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

// MainnetBlocks returns the blocks of btcd's blk_0_to_14131.dat (a Core blk
// file of 2009–2010: P2PK coinbases, the first P2PKH spends) in height
// order, index = height. A blk file stores blocks in arrival order, so the
// chain is rebuilt by prev-hash links from genesis rather than trusted.
// Each call decodes afresh: the blocks are the caller's to change.
func MainnetBlocks(tb testing.TB) []*wire.MsgBlock {
	tb.Helper()
	path := filepath.Join(ModuleDir(tb, btcdModule), "blockchain", "testdata", "blk_0_to_14131.dat")
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("read %s: %v", path, err)
	}
	records := blkRecords(tb, raw)
	byPrev := make(map[chainhash.Hash]*wire.MsgBlock, len(records))
	var genesis *wire.MsgBlock
	for _, block := range records {
		prev := block.Header.PrevBlock
		if prev == (chainhash.Hash{}) {
			genesis = block
		} else if other, dup := byPrev[prev]; dup {
			tb.Fatalf("blocks %s and %s both extend %s", other.BlockHash(), block.BlockHash(), prev)
		}
		byPrev[prev] = block
	}
	if genesis == nil {
		tb.Fatal("no genesis block in the blk file")
	}
	blocks := make([]*wire.MsgBlock, 0, len(records))
	for b := genesis; b != nil; b = byPrev[b.BlockHash()] {
		blocks = append(blocks, b)
	}
	if len(blocks) != len(records) {
		tb.Fatalf("%d of %d blocks connect to genesis", len(blocks), len(records))
	}
	return blocks
}

// BigBlock returns mainnet block 277,647 (btcd's testdata; 2014, a few
// hundred transactions of every kind of the time).
func BigBlock(tb testing.TB) *wire.MsgBlock {
	tb.Helper()
	path := filepath.Join(ModuleDir(tb, btcdModule), "blockchain", "testdata", "277647.dat.bz2")
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	raw, err := io.ReadAll(bzip2.NewReader(f))
	if err != nil {
		tb.Fatalf("read %s: %v", path, err)
	}
	blocks := blkRecords(tb, raw)
	if len(blocks) != 1 {
		tb.Fatalf("277647.dat holds %d blocks", len(blocks))
	}
	return blocks[0]
}

// blkRecords decodes a Core blk file's [magic][LE length][block] records
// up to the zero padding Core preallocates.
func blkRecords(tb testing.TB, raw []byte) []*wire.MsgBlock {
	tb.Helper()
	var out []*wire.MsgBlock
	for rest := raw; len(rest) >= 8; {
		magic := binary.LittleEndian.Uint32(rest)
		if magic != uint32(wire.MainNet) {
			if magic != 0 {
				tb.Fatalf("blk record %d: magic %#x, want mainnet", len(out), magic)
			}
			break
		}
		size := binary.LittleEndian.Uint32(rest[4:])
		if uint64(size) > uint64(len(rest)-8) {
			tb.Fatalf("blk record %d of %d bytes overruns the file", len(out), size)
		}
		var block wire.MsgBlock
		r := bytes.NewReader(rest[8 : 8+size])
		if err := block.Deserialize(r); err != nil || r.Len() != 0 {
			tb.Fatalf("blk record %d: decode block: %v (%d bytes left)", len(out), err, r.Len())
		}
		out = append(out, &block)
		rest = rest[8+size:]
	}
	return out
}
