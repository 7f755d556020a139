package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/corefiles"
)

// The blocks directory defaults to <bitcoindatadir>/<chain subdir>/blocks,
// where Core keeps it, and an explicit one is kept.
func TestConfigBlocksDirDefault(t *testing.T) {
	for chain, sub := range map[string]string{"main": "", "testnet": "testnet3", "regtest": "regtest", "signet": "signet"} {
		cfg, err := loadConfig([]string{"--chain=" + chain, "--bitcoindatadir=/n"}, envFrom(nil), &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join("/n", sub, "blocks"); cfg.BlocksDir != want {
			t.Errorf("%s: blocksdir %q, want %q", chain, cfg.BlocksDir, want)
		}
	}
	cfg, err := loadConfig([]string{"--prevoutsource=blocksdir", "--blocksdir=/srv/core/blocks"}, envFrom(nil), &bytes.Buffer{})
	if err != nil || cfg.BlocksDir != "/srv/core/blocks" || cfg.PrevoutSource != "blocksdir" {
		t.Errorf("explicit blocksdir: %q, %q, %v", cfg.BlocksDir, cfg.PrevoutSource, err)
	}
}

// The real daemon with prevoutsource = blocksdir: btcd (without a
// transaction index, so no other source exists) supplies the chain's block
// hashes over RPC, and the corefiles writer lays btcd's chain out as Core
// would (obfuscated, over several blk/rev pairs). The daemon indexes the
// whole chain from the files, then follows blocks appended to the files
// while it runs; every filter and filter header equals btcd's getcfilter.
func TestDaemonIndexesFromBlocksDir(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{WalletSeed: 12})
	if err := btcdtest.BuildTxRichChain(ctx, node, node.Wallet(), 60); err != nil {
		t.Fatal(err)
	}
	_, best, err := node.BestBlock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	blocksDir := filepath.Join(t.TempDir(), "blocks")
	w, err := corefiles.NewWriter(blocksDir, node.Params(), corefiles.Options{
		Key: [8]byte{0x44, 0xca, 0x4d, 0x2b, 0x0a, 0xc9, 0x46, 0x83}, MaxFileSize: 64 << 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	addBlocks := func(from, to int32) {
		t.Helper()
		for h := from; h <= to; h++ {
			hash, err := node.BlockHash(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			blk, err := node.Block(ctx, hash)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.AddBlock(blk); err != nil {
				t.Fatal(err)
			}
		}
	}
	addBlocks(0, best)
	if w.Files() < 3 {
		t.Fatalf("%d blk files; want a chain over several", w.Files())
	}

	datadir := t.TempDir()
	args := append(nodeArgs(node, "regtest", datadir), "--prevoutsource=blocksdir", "--blocksdir="+blocksDir, "--nodep2p=")
	d := startDaemon(t, args...)
	d.waitLog(30*time.Second, func(m map[string]any) bool { return m["mode"] == "blocksdir" && m["fallback"] == "none" })
	d.waitLog(time.Minute, heightAtLeast(float64(best)))

	// Blocks mined while the daemon runs reach the files after the node
	// reports them (here, unlike with Core, even after the node's tip
	// moved); the daemon retries until they are there.
	hashes, err := node.Generate(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	addBlocks(best+1, best+int32(len(hashes)))
	d.waitLog(time.Minute, heightAtLeast(float64(best)+float64(len(hashes))))
	if code, _ := d.terminate(10 * time.Second); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
	st := openStoreAfterExit(t, datadir, "regtest", node.Params())
	if err := node.CompareStore(ctx, st, 0); err != nil {
		t.Fatal(err)
	}
	if tip, _ := st.Tip(); tip.Height != uint32(best)+uint32(len(hashes)) {
		t.Fatalf("store tip %d, want %d", tip.Height, best+int32(len(hashes)))
	}
}
