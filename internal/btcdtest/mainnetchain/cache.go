package mainnetchain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/cfindexd/cfindexd/internal/corefiles"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
)

// mainnetGenVersion changes whenever Generate would build a
// different chain for the same shape; it is part of the cache key, so an
// old cached chain is never taken for a new one.
const mainnetGenVersion = 2

// Cache entry layout: <root>/<key>/ holds
//
//	btcd/data/   btcd's data directory after a clean stop (simnet, --txindex)
//	blocks.dat   every block, genesis first (block file, blockfile.go)
//	chain.json   Stats and how the entry was made
const (
	cacheBtcdDir   = "btcd"
	cacheBlocks    = "blocks.dat"
	cacheManifest  = "chain.json"
	cacheNet       = "simnet"
	cacheBtcdData  = "data" // btcdtest.Node.args: --datadir=<DataDir>/data
	cacheTmpPrefix = ".tmp-"
	// cacheStopLimit bounds btcd's shutdown after generating: flushing a
	// full UTXO cache to disk on a busy machine takes minutes.
	cacheStopLimit = 10 * time.Minute
)

// CacheRoot is where cached mainnet-shaped chains live by default:
// os.UserCacheDir()/cfindexd-bench.
func CacheRoot() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("user cache dir: %w", err)
	}
	return filepath.Join(dir, "cfindexd-bench"), nil
}

// Chain is a generated mainnet-shaped chain in the cache.
type Chain struct {
	// Dir is the cache entry.
	Dir string
	// Stats describes the chain; Generated is true when this call built
	// it (false: it came from the cache).
	Stats     Stats
	Generated bool
}

// manifest is chain.json.
type manifest struct {
	Version     int       `json:"generator_version"`
	BtcdVersion string    `json:"btcd_version"`
	Net         string    `json:"net"`
	Created     time.Time `json:"created"`
	Stats       Stats     `json:"stats"`
}

// mainnetKey names the cache entry of shape.
func mainnetKey(shape Shape) string {
	return fmt.Sprintf("mainnet-v%d-btcd-%s-b%d-t%d-o%d-s%d", mainnetGenVersion, btcdtest.BtcdVersion, shape.Blocks, shape.TxsPerBlock, shape.oldCoins(), shape.Seed)
}

// LoadOrGenerate returns the cached chain of shape under root,
// generating it first (Generate on a fresh simnet btcd with
// --txindex, stopped cleanly afterwards) when it is not there. A file lock
// makes concurrent callers wait for one generation. say, if not nil,
// receives progress lines.
func LoadOrGenerate(ctx context.Context, root string, shape Shape, say func(format string, args ...any)) (*Chain, error) {
	if err := shape.Validate(); err != nil {
		return nil, err
	}
	if say == nil {
		say = func(string, ...any) {}
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("chain cache: %w", err)
	}
	dir := filepath.Join(root, mainnetKey(shape))
	if c, err := loadMainnet(dir); err == nil {
		return c, nil
	}
	unlock, err := btcdtest.LockFile(dir + ".lock")
	if err != nil {
		return nil, err
	}
	defer unlock()
	if c, err := loadMainnet(dir); err == nil { // built while we waited
		return c, nil
	}
	os.RemoveAll(dir) // an unreadable entry is rebuilt
	tmp := filepath.Join(root, cacheTmpPrefix+mainnetKey(shape))
	os.RemoveAll(tmp) // left over from a killed generation
	defer os.RemoveAll(tmp)
	stats, err := generateInto(ctx, tmp, shape, say)
	if err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, fmt.Errorf("chain cache: %w", err)
	}
	return &Chain{Dir: dir, Stats: stats, Generated: true}, nil
}

// loadMainnet reads a complete cache entry.
func loadMainnet(dir string) (*Chain, error) {
	data, err := os.ReadFile(filepath.Join(dir, cacheManifest))
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("chain cache %s: %w", dir, err)
	}
	if m.Version != mainnetGenVersion || m.BtcdVersion != btcdtest.BtcdVersion || m.Net != cacheNet {
		return nil, fmt.Errorf("chain cache %s: made by generator %d for btcd %s", dir, m.Version, m.BtcdVersion)
	}
	for _, p := range []string{filepath.Join(dir, cacheBlocks), filepath.Join(dir, cacheBtcdDir, cacheBtcdData)} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("chain cache %s: %w", dir, err)
		}
	}
	return &Chain{Dir: dir, Stats: m.Stats}, nil
}

// generateInto builds the chain with a btcd whose datadir is dir/btcd and
// writes the block file and the manifest beside it.
func generateInto(ctx context.Context, dir string, shape Shape, say func(string, ...any)) (Stats, error) {
	btcdDir := filepath.Join(dir, cacheBtcdDir)
	if err := os.MkdirAll(btcdDir, 0o755); err != nil {
		return Stats{}, fmt.Errorf("chain cache: %w", err)
	}
	n, err := btcdtest.StartNode(btcdtest.Options{Net: cacheNet, DataDir: btcdDir, TxIndex: true, WalletSeed: shape.Seed})
	if err != nil {
		return Stats{}, err
	}
	defer n.Stop()
	bf, err := corefiles.CreateChainFile(filepath.Join(dir, cacheBlocks), n.Params().Net)
	if err != nil {
		return Stats{}, err
	}
	defer bf.Close()
	say("generating a mainnet-shaped chain: %d blocks of %d transactions (seed %d) in %s", shape.Blocks, shape.TxsPerBlock, shape.Seed, dir)
	last := time.Now()
	stats, err := Generate(ctx, n, shape, func(_ int32, raw []byte) error { return bf.Append(raw) },
		func(p Progress) {
			if time.Since(last) >= 5*time.Second || p.Block == p.Blocks {
				last = time.Now()
				say("  block %d of %d (height %d), %d transactions, %s, %.0f tx/s",
					p.Block, p.Blocks, p.Height, p.Txs, p.Elapsed.Round(time.Second), float64(p.Txs)/p.Elapsed.Seconds())
			}
		})
	if err != nil {
		return stats, fmt.Errorf("%w (btcd log %s)", err, n.LogPath())
	}
	if err := bf.Close(); err != nil {
		return stats, err
	}
	say("stopping btcd (it flushes its UTXO cache)")
	if err := n.StopWithin(cacheStopLimit); err != nil {
		return stats, fmt.Errorf("stop btcd after generating: %w", err)
	}
	data, err := json.MarshalIndent(manifest{Version: mainnetGenVersion, BtcdVersion: btcdtest.BtcdVersion, Net: cacheNet,
		Created: time.Now().UTC(), Stats: stats}, "", "  ")
	if err != nil {
		return stats, fmt.Errorf("chain cache: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, cacheManifest), data, 0o644); err != nil {
		return stats, fmt.Errorf("chain cache: %w", err)
	}
	return stats, nil
}

// BlocksPath is the chain's block file (corefiles.ReadChainFile).
func (c *Chain) BlocksPath() string { return filepath.Join(c.Dir, cacheBlocks) }

// Options returns the node options the chain was generated with, for a
// node started on a copy of its data (CopyNodeData).
func (c *Chain) Options(dataDir string) btcdtest.Options {
	return btcdtest.Options{Net: cacheNet, DataDir: dataDir, TxIndex: true, WalletSeed: c.Stats.Shape.Seed}
}

// CopyNodeData copies the chain's btcd data into dataDir (which must not
// hold a node's data yet), so a node started there with Options(dataDir)
// has the whole chain. The cache itself is never run: btcd rewrites its
// database (the benchmark drops and rebuilds its filter index).
func (c *Chain) CopyNodeData(dataDir string) error {
	src := filepath.Join(c.Dir, cacheBtcdDir, cacheBtcdData)
	dst := filepath.Join(dataDir, cacheBtcdData)
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("copy chain: %s exists", dst)
	}
	return copyTree(src, dst)
}

// copyTree copies the regular files and directories under src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			return copyFile(path, target)
		}
		return errors.New("copy chain: " + path + " is neither a file nor a directory")
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}

// Cached reports whether the chain of shape is complete in the cache
// under root, so that LoadOrGenerate will not generate it.
func Cached(root string, shape Shape) bool {
	if shape.Validate() != nil {
		return false
	}
	_, err := loadMainnet(filepath.Join(root, mainnetKey(shape)))
	return err == nil
}
