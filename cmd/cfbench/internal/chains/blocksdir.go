package chains

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/corefiles"
)

// blocksDirKey is the obfuscation key of the blocks directories cfbench
// writes (xor.dat): a non-zero key, as Core >= 28 picks at random, so
// every byte read goes through the de-obfuscation a real node's needs.
func blocksDirKey() [8]byte { return [8]byte{0x5e, 0x17, 0xa3, 0x92, 0x0c, 0xd4, 0x6b, 0xf1} }

// BlocksDirInfo describes the Core-format blocks directory a run wrote
// from the chain.
type BlocksDirInfo struct {
	// Dir is the directory (blk*.dat, rev*.dat, xor.dat).
	Dir string `json:"dir"`
	// Blocks is how many blocks were written, Files how many blk/rev
	// pairs (Core's 128 MiB maximum file size), BlkBytes and RevBytes the
	// files' sizes on disk (the last pair keeps Core's zero padding).
	Blocks   int   `json:"blocks"`
	Files    int   `json:"files"`
	BlkBytes int64 `json:"blk_bytes"`
	RevBytes int64 `json:"rev_bytes"`
	// Took is how long writing took (reading the chain, connecting every
	// block for its undo data, writing and syncing the files).
	Took time.Duration `json:"write_ns"`
}

// WriteBlocksDir writes the chain into dir as Bitcoin Core lays it out
// (internal/corefiles: blk/rev pairs of at most 128 MiB, preallocated
// in Core's chunks, obfuscated with blocksDirKey): from the chain's block
// file when it has one (the mainnet-shaped chain's blocks.dat), else
// block by block from the node.
func WriteBlocksDir(ctx context.Context, dir string, chain Info, node *btcdtest.Node) (BlocksDirInfo, error) {
	start := time.Now()
	params := node.Params()
	w, err := corefiles.NewWriter(dir, params, corefiles.Options{Key: blocksDirKey()})
	if err != nil {
		return BlocksDirInfo{}, fmt.Errorf("blocks dir: %w", err)
	}
	add := func(blk *wire.MsgBlock) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return w.AddBlock(blk)
	}
	if chain.blockFile != "" {
		err = addFromBlockFile(chain.blockFile, params, add)
	} else {
		err = addFromNode(ctx, node, chain.Height, add)
	}
	if err != nil {
		w.Close()
		return BlocksDirInfo{}, fmt.Errorf("blocks dir: %w", err)
	}
	if err := w.Close(); err != nil {
		return BlocksDirInfo{}, fmt.Errorf("blocks dir: %w", err)
	}
	info := BlocksDirInfo{Dir: dir, Blocks: len(w.Locations()), Files: w.Files()}
	if info.Blocks != int(chain.Height)+1 {
		return info, fmt.Errorf("blocks dir: wrote %d blocks, the chain has %d", info.Blocks, chain.Height+1)
	}
	if info.BlkBytes, info.RevBytes, err = blockFileSizes(dir); err != nil {
		return info, err
	}
	if err := syncDir(dir); err != nil {
		return info, err
	}
	info.Took = time.Since(start)
	return info, nil
}

// addFromBlockFile decodes every block of the block file at path, in
// order, and hands it to add.
func addFromBlockFile(path string, params *chaincfg.Params, add func(*wire.MsgBlock) error) error {
	return corefiles.ReadChainFile(path, params.Net, func(height int32, raw []byte) error {
		var blk wire.MsgBlock
		if err := blk.Deserialize(bytes.NewReader(raw)); err != nil {
			return fmt.Errorf("%s: block %d: %w", path, height, err)
		}
		return add(&blk)
	})
}

// addFromNode asks the node for every block of its active chain up to
// height and hands each to add.
func addFromNode(ctx context.Context, node *btcdtest.Node, height uint32, add func(*wire.MsgBlock) error) error {
	for h := int32(0); h <= int32(height); h++ {
		hash, err := node.BlockHash(ctx, h)
		if err != nil {
			return err
		}
		blk, err := node.Block(ctx, hash)
		if err != nil {
			return err
		}
		if err := add(blk); err != nil {
			return err
		}
	}
	return nil
}

// blockFileSizes totals the sizes of the blk and rev files in dir.
func blockFileSizes(dir string) (blk, rev int64, err error) {
	for _, pattern := range []string{"blk*.dat", "rev*.dat"} {
		paths, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return 0, 0, err
		}
		for _, p := range paths {
			fi, err := os.Stat(p)
			if err != nil {
				return 0, 0, fmt.Errorf("blocks dir: %w", err)
			}
			if pattern == "blk*.dat" {
				blk += fi.Size()
			} else {
				rev += fi.Size()
			}
		}
	}
	return blk, rev, nil
}

// syncDir flushes every file in dir to disk, so the catch-ups that read
// them do not share the machine with the kernel writing them back.
func syncDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("blocks dir: %w", err)
	}
	for _, e := range entries {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return fmt.Errorf("blocks dir: %w", err)
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return fmt.Errorf("blocks dir: sync %s: %w", e.Name(), err)
		}
	}
	return nil
}
