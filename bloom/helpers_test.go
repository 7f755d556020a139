package bloom

import (
	"bytes"
	"compress/bzip2"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// coreVectors are Bitcoin Core's BIP-37 unit-test vectors (mainnet
// transactions and blocks), in testdata/bip37.
type coreVectors struct {
	BloomMatchTx         string `json:"bloom_match_tx"`
	BloomMatchSpendingTx string `json:"bloom_match_spending_tx"`
	MerkleBlock3         string `json:"merkle_block_3"`
	MerkleBlock3Bytes    string `json:"merkle_block_3_serialized"`
	MerkleBlock4         string `json:"merkle_block_4"`
}

func loadCoreVectors(tb testing.TB) coreVectors {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "bip37", "core-bloom-vectors.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var v coreVectors
	if err := json.Unmarshal(raw, &v); err != nil {
		tb.Fatal(err)
	}
	return v
}

func mustHex(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		tb.Fatalf("hex %q: %v", s, err)
	}
	return b
}

func mustTx(tb testing.TB, s string) *wire.MsgTx {
	tb.Helper()
	var tx wire.MsgTx
	r := bytes.NewReader(mustHex(tb, s))
	if err := tx.Deserialize(r); err != nil || r.Len() != 0 {
		tb.Fatalf("decode tx: %v (%d bytes left)", err, r.Len())
	}
	return &tx
}

func mustBlock(tb testing.TB, raw []byte) *wire.MsgBlock {
	tb.Helper()
	var blk wire.MsgBlock
	r := bytes.NewReader(raw)
	if err := blk.Deserialize(r); err != nil || r.Len() != 0 {
		tb.Fatalf("decode block: %v (%d bytes left)", err, r.Len())
	}
	return &blk
}

// hashFromStr parses a hash in display (reversed) order.
func hashFromStr(tb testing.TB, s string) chainhash.Hash {
	tb.Helper()
	h, err := chainhash.NewHashFromStr(s)
	if err != nil {
		tb.Fatal(err)
	}
	return *h
}

// moduleDir asks the go command where a required module lives.
func moduleDir(tb testing.TB, module string) string {
	tb.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	if err != nil {
		tb.Fatalf("go list -m %s: %v", module, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		tb.Fatalf("module %s is not in the module cache", module)
	}
	return dir
}

var (
	mainnetOnce   sync.Once
	mainnetBlocks []*wire.MsgBlock
	bigBlockOnce  sync.Once
	bigBlock      *wire.MsgBlock
)

// loadMainnetBlocks returns the blocks of btcd's blk_0_to_14131.dat (a
// Core blk file from 2009–2010: P2PK coinbases, the first P2PKH spends),
// in file order. Order does not matter to the tests that use them.
func loadMainnetBlocks(tb testing.TB) []*wire.MsgBlock {
	tb.Helper()
	mainnetOnce.Do(func() {
		raw, err := os.ReadFile(filepath.Join(moduleDir(tb, "github.com/btcsuite/btcd"), "blockchain", "testdata", "blk_0_to_14131.dat"))
		if err != nil {
			tb.Fatal(err)
		}
		mainnetBlocks = readBlkRecords(tb, raw)
	})
	if mainnetBlocks == nil {
		tb.Fatal("mainnet blocks did not load")
	}
	return mainnetBlocks
}

// loadBigBlock returns mainnet block 277,647 (btcd's testdata; 2014, a few
// hundred transactions of every kind of the time).
func loadBigBlock(tb testing.TB) *wire.MsgBlock {
	tb.Helper()
	bigBlockOnce.Do(func() {
		f, err := os.Open(filepath.Join(moduleDir(tb, "github.com/btcsuite/btcd"), "blockchain", "testdata", "277647.dat.bz2"))
		if err != nil {
			tb.Fatal(err)
		}
		defer f.Close()
		raw, err := io.ReadAll(bzip2.NewReader(f))
		if err != nil {
			tb.Fatal(err)
		}
		blocks := readBlkRecords(tb, raw)
		if len(blocks) != 1 {
			tb.Fatalf("277647.dat holds %d blocks", len(blocks))
		}
		bigBlock = blocks[0]
	})
	if bigBlock == nil {
		tb.Fatal("block 277647 did not load")
	}
	return bigBlock
}

// readBlkRecords decodes [magic][LE length][block] records.
func readBlkRecords(tb testing.TB, raw []byte) []*wire.MsgBlock {
	tb.Helper()
	var out []*wire.MsgBlock
	for rest := raw; len(rest) >= 8; {
		if binary.LittleEndian.Uint32(rest) != uint32(wire.MainNet) {
			break // Core preallocates blk files with zeros
		}
		size := binary.LittleEndian.Uint32(rest[4:])
		if uint64(size) > uint64(len(rest)-8) {
			tb.Fatalf("blk record of %d bytes overruns the file", size)
		}
		out = append(out, mustBlock(tb, rest[8:8+size]))
		rest = rest[8+size:]
	}
	return out
}
