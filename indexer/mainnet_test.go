package indexer

import (
	"encoding/hex"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/gcs"
	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/internal/testvectors"
)

// Mainnet genesis basic filter and its header, as published (Bitcoin Core
// getblockfilter at height 0; the header in display order). They anchor the
// reading of neutrino's file: its first header must be this one.
const (
	mainnetGenesisFilterHex = "017fa880"
	mainnetGenesisHeaderStr = "02c2392180d0ce2b5b6f8b08d39a11ffe831c673311a3ecf77b97fc3f0303c9f"
	mainnetBlockCount       = 14132 // heights 0..14131
)

// TestMainnetFilterHeaders recomputes the basic filter of every mainnet block
// from 0 to 14131 out of real block data, with spent scripts tracked from the
// earlier blocks of the same file, chains the filter headers, and requires
// each to equal the header neutrino ships for that height.
func TestMainnetFilterHeaders(t *testing.T) {
	start := time.Now()
	blocks := testvectors.MainnetBlocks(t)
	loadedBlocks := time.Now()
	if len(blocks) != mainnetBlockCount {
		t.Fatalf("blk file holds %d blocks, want %d", len(blocks), mainnetBlockCount)
	}
	want := loadNeutrinoFilterHeaders(t, len(blocks))
	t.Logf("loaded %d blocks in %v and %d reference headers in %v", len(blocks),
		loadedBlocks.Sub(start), len(want), time.Since(loadedBlocks))
	genesisHeader, err := chainhash.NewHashFromStr(mainnetGenesisHeaderStr)
	if err != nil {
		t.Fatal(err)
	}
	if want[0] != *genesisHeader {
		t.Fatalf("neutrino height 0 is %s, want the published genesis header %s", want[0], genesisHeader)
	}

	var (
		b           gcs.BasicBuilder
		utxos       = make(map[wire.OutPoint][]byte)
		prevScripts [][]byte
		filters     = make([][]byte, 0, len(blocks))
		prev        chainhash.Hash // genesis chains from the zero hash
		spends      int
	)
	for height, block := range blocks {
		hash := block.BlockHash()
		prevScripts = prevScripts[:0]
		for i, tx := range block.Transactions {
			if i > 0 { // the coinbase input spends nothing
				for _, in := range tx.TxIn {
					script, ok := utxos[in.PreviousOutPoint]
					if !ok {
						t.Fatalf("height %d: input spends unknown %v", height, in.PreviousOutPoint)
					}
					delete(utxos, in.PreviousOutPoint)
					prevScripts = append(prevScripts, script)
					spends++
				}
			}
			// Outputs go in after this tx's inputs: a later tx of the same
			// block may spend them.
			txid := tx.TxHash()
			for idx, out := range tx.TxOut {
				utxos[wire.OutPoint{Hash: txid, Index: uint32(idx)}] = out.PkScript
			}
		}

		b.Reset()
		if err := gcs.AddBasicElements(&b, block, prevScripts); err != nil {
			t.Fatalf("height %d: %v", height, err)
		}
		filter := b.AppendFilter(nil, hash)
		filters = append(filters, filter)
		prev = headers.FilterHeader(filter, prev)
		if prev != want[height] {
			t.Fatalf("height %d (%s): filter %x chains to header %s, neutrino has %s",
				height, hash, filter, prev, want[height])
		}
		if height == 0 && hex.EncodeToString(filter) != mainnetGenesisFilterHex {
			t.Fatalf("genesis filter %x, want %s", filter, mainnetGenesisFilterHex)
		}
	}
	if spends == 0 {
		t.Fatal("no block spent anything: the prevout path went untested")
	}
	// The same chain through the verifier the p2p and store code use.
	if err := headers.VerifyChain(chainhash.Hash{}, filters, want); err != nil {
		t.Fatalf("VerifyChain: %v", err)
	}
	t.Logf("%d blocks, %d spent prevouts, headers match neutrino through height %d; total %v",
		len(blocks), spends, len(blocks)-1, time.Since(start))
}
