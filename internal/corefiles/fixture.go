package corefiles

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Fixture is the recorded Bitcoin Core v31 regtest blocks directory in
// testdata/bitcoind-v31-blocksdir (its MANIFEST.md describes it): the
// files, and per block Core's filter, filter header, spent outputs and
// block-index positions.
type Fixture struct {
	// Dir is the fixture's directory; BlocksDir its blocks/ directory.
	Dir, BlocksDir string
	Params         *chaincfg.Params
	Key            [8]byte
	// Tip is the active tip (height TipHeight).
	Tip       chainhash.Hash
	TipHeight int32
	// Blocks are all 204 blocks by height, the active block first at a
	// shared height.
	Blocks []*FixtureBlock
	// OriginalBlkSHA256 is the SHA-256 of blk00000.dat before its zero
	// padding was cut (16 MiB, as Core preallocated it).
	OriginalBlkSHA256 string
	OriginalBlkSize   int64

	byHash map[chainhash.Hash]*FixtureBlock
	active map[int32]*FixtureBlock
}

// FixtureBlock is one block of the fixture.
type FixtureBlock struct {
	Height int32
	Hash   chainhash.Hash
	Prev   chainhash.Hash // zero for genesis
	Active bool
	NTx    int
	// Filter is Core's basic filter (getblockfilter "filter", with its
	// N prefix); FilterHeader its header in internal byte order.
	Filter       []byte
	FilterHeader chainhash.Hash
	// SpentTxOuts is the REST /rest/spenttxouts/<hash>.bin body.
	SpentTxOuts []byte
	// BlockSize and BlockSHA256 describe getblock <hash> 0.
	BlockSize   int
	BlockSHA256 string
	// File, DataPos and UndoPos are Core's block-index entry (UndoPos 0
	// for genesis).
	File             int
	DataPos, UndoPos int64
}

// FixtureDir returns testdata/bitcoind-v31-blocksdir of this module.
func FixtureDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "bitcoind-v31-blocksdir")
}

// LoadFixture loads FixtureDir or fails tb.
func LoadFixture(tb testing.TB) *Fixture {
	tb.Helper()
	fx, err := LoadFixtureDir(FixtureDir())
	if err != nil {
		tb.Fatalf("corefiles: %v", err)
	}
	return fx
}

// LoadFixtureDir loads the fixture in dir.
func LoadFixtureDir(dir string) (*Fixture, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "chain.json"))
	if err != nil {
		return nil, err
	}
	var doc struct {
		Chain     string `json:"chain"`
		XORKey    string `json:"xor_key"`
		Tip       string `json:"tip"`
		TipHeight int32  `json:"tip_height"`
		Files     map[string]struct {
			OriginalBytes  int64  `json:"original_bytes"`
			OriginalSHA256 string `json:"original_sha256"`
		} `json:"files"`
		Blocks []struct {
			Height       int32  `json:"height"`
			Hash         string `json:"hash"`
			Prev         string `json:"prev"`
			Active       bool   `json:"active"`
			NTx          int    `json:"ntx"`
			BlockSize    int    `json:"block_size"`
			BlockSHA256  string `json:"block_sha256"`
			Filter       string `json:"filter"`
			FilterHeader string `json:"filter_header"`
			SpentTxOuts  string `json:"spenttxouts"`
			Index        struct {
				File    int   `json:"file"`
				DataPos int64 `json:"data_pos"`
				UndoPos int64 `json:"undo_pos"`
			} `json:"index"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("chain.json: %w", err)
	}
	if doc.Chain != "regtest" {
		return nil, fmt.Errorf("chain.json: chain %q, want regtest", doc.Chain)
	}
	fx := &Fixture{
		Dir: dir, BlocksDir: filepath.Join(dir, "blocks"), Params: &chaincfg.RegressionNetParams,
		TipHeight: doc.TipHeight,
		byHash:    map[chainhash.Hash]*FixtureBlock{}, active: map[int32]*FixtureBlock{},
	}
	key, err := hex.DecodeString(doc.XORKey)
	if err != nil || len(key) != 8 {
		return nil, fmt.Errorf("chain.json: xor_key %q", doc.XORKey)
	}
	copy(fx.Key[:], key)
	if err := chainhash.Decode(&fx.Tip, doc.Tip); err != nil {
		return nil, err
	}
	orig := doc.Files["blocks/blk00000.dat"]
	fx.OriginalBlkSHA256, fx.OriginalBlkSize = orig.OriginalSHA256, orig.OriginalBytes
	for _, b := range doc.Blocks {
		fb := &FixtureBlock{
			Height: b.Height, Active: b.Active, NTx: b.NTx, BlockSize: b.BlockSize, BlockSHA256: b.BlockSHA256,
			File: b.Index.File, DataPos: b.Index.DataPos, UndoPos: b.Index.UndoPos,
		}
		if err := chainhash.Decode(&fb.Hash, b.Hash); err != nil {
			return nil, fmt.Errorf("block %d: %w", b.Height, err)
		}
		if b.Prev != "" {
			if err := chainhash.Decode(&fb.Prev, b.Prev); err != nil {
				return nil, fmt.Errorf("block %d: %w", b.Height, err)
			}
		}
		if fb.Filter, err = hex.DecodeString(b.Filter); err != nil {
			return nil, fmt.Errorf("block %d filter: %w", b.Height, err)
		}
		if err := chainhash.Decode(&fb.FilterHeader, b.FilterHeader); err != nil {
			return nil, fmt.Errorf("block %d filter header: %w", b.Height, err)
		}
		if fb.SpentTxOuts, err = os.ReadFile(filepath.Join(dir, b.SpentTxOuts)); err != nil {
			return nil, err
		}
		fx.Blocks = append(fx.Blocks, fb)
		fx.byHash[fb.Hash] = fb
		if fb.Active {
			fx.active[fb.Height] = fb
		}
	}
	if len(fx.active) != int(doc.TipHeight)+1 {
		return nil, fmt.Errorf("chain.json: %d active blocks for tip height %d", len(fx.active), doc.TipHeight)
	}
	return fx, nil
}

// Block returns the block with hash.
func (fx *Fixture) Block(hash chainhash.Hash) (*FixtureBlock, bool) {
	b, ok := fx.byHash[hash]
	return b, ok
}

// ActiveChain returns the active chain's blocks, genesis first.
func (fx *Fixture) ActiveChain() []*FixtureBlock {
	out := make([]*FixtureBlock, 0, len(fx.active))
	for h := int32(0); h <= fx.TipHeight; h++ {
		out = append(out, fx.active[h])
	}
	return out
}

// StoredBlocks reads the fixture's blk00000.dat with a parser of its own
// (no code shared with package blockfiles) and returns its blocks in the
// order Core stored them.
func (fx *Fixture) StoredBlocks() ([]*wire.MsgBlock, error) {
	raw, err := os.ReadFile(filepath.Join(fx.BlocksDir, "blk00000.dat"))
	if err != nil {
		return nil, err
	}
	for i := range raw {
		raw[i] ^= fx.Key[i%8]
	}
	var magic [4]byte
	binary.LittleEndian.PutUint32(magic[:], uint32(fx.Params.Net))
	var blocks []*wire.MsgBlock
	for off := 0; off+8 <= len(raw); {
		if !bytes.Equal(raw[off:off+4], magic[:]) {
			return nil, fmt.Errorf("blk00000.dat: no magic at %d", off)
		}
		size := int(binary.LittleEndian.Uint32(raw[off+4:]))
		if off+8+size > len(raw) {
			return nil, fmt.Errorf("blk00000.dat: record at %d overruns the file", off)
		}
		var b wire.MsgBlock
		if err := b.Deserialize(bytes.NewReader(raw[off+8 : off+8+size])); err != nil {
			return nil, fmt.Errorf("blk00000.dat: block at %d: %w", off, err)
		}
		blocks = append(blocks, &b)
		off += 8 + size
	}
	return blocks, nil
}
