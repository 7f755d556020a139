package mainnetchain

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/corefiles"
	"github.com/cfindexd/cfindexd/internal/testtime"
)

// TestGenerateMainnetChainCached generates a small mainnet-shaped chain
// into a fresh cache (btcd validates every block, signatures included),
// checks its block file against btcd's chain and its statistics against
// the blocks, then loads it again from the cache and runs a node on a copy
// of its data.
func TestGenerateMainnetChainCached(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(50*time.Second))
	defer cancel()
	root := t.TempDir()
	shape := Shape{Blocks: 4, TxsPerBlock: 150, Seed: 7, OldCoins: 3000}
	var lines int
	c, err := LoadOrGenerate(ctx, root, shape, func(string, ...any) { lines++ })
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	s := c.Stats
	t.Logf("generated in %v (signing %v): height %d, %d txs, %d inputs, %d outputs, %d bytes; outputs %v; spent %v; ages %v",
		s.Took, s.SignWall, s.Height, s.Txs, s.Inputs, s.Outputs, s.RichBytes, s.OutputKinds, s.SpentKinds, s.SpendAges)
	if !c.Generated || lines == 0 {
		t.Errorf("generated %v, %d progress lines", c.Generated, lines)
	}
	if s.Txs != 4*150 || s.Height != s.FirstRich+3 || s.Inputs < s.Txs || s.Outputs <= s.Txs {
		t.Errorf("stats %+v", s)
	}
	for _, k := range []string{"p2wpkh", "p2tr", "p2sh-p2wpkh", "p2pkh", "p2wsh-2of3", "op_return"} {
		if s.OutputKinds[k] == 0 {
			t.Errorf("no %s output in %v", k, s.OutputKinds)
		}
	}
	for _, k := range []string{"p2wpkh", "p2tr", "p2sh-p2wpkh", "p2pkh", "p2wsh-2of3"} {
		if s.SpentKinds[k] == 0 {
			t.Errorf("no %s spend in %v", k, s.SpentKinds)
		}
	}
	for _, a := range ageClassNames {
		if s.SpendAges[a] == 0 {
			t.Errorf("no spend of age %q in %v", a, s.SpendAges)
		}
	}

	// Replay the block file: a chain from genesis to the tip whose rich
	// blocks hold exactly the counted transactions and outputs.
	var prev chainhash.Hash
	txs, outs, n := 0, 0, int32(0)
	err = corefiles.ReadChainFile(c.BlocksPath(), wire.SimNet, func(h int32, raw []byte) error {
		var blk wire.MsgBlock
		if err := blk.Deserialize(bytes.NewReader(raw)); err != nil {
			t.Fatalf("block %d: %v", h, err)
		}
		if h > 0 && blk.Header.PrevBlock != prev {
			t.Fatalf("block %d does not extend %s", h, prev)
		}
		prev = blk.BlockHash()
		if h >= s.FirstRich {
			txs += len(blk.Transactions) - 1
			for _, tx := range blk.Transactions[1:] {
				outs += len(tx.TxOut)
			}
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != s.Height+1 || prev.String() != s.Tip || txs != s.Txs || outs != s.Outputs {
		t.Errorf("block file: %d blocks to %s, %d txs, %d outputs; stats %d, %s, %d, %d", n, prev, txs, outs, s.Height+1, s.Tip, s.Txs, s.Outputs)
	}

	again, err := LoadOrGenerate(ctx, root, shape, nil)
	if err != nil || again.Generated || again.Stats.Tip != s.Tip {
		t.Fatalf("second load: %+v, %v", again, err)
	}
	dataDir := filepath.Join(t.TempDir(), "node")
	if err := again.CopyNodeData(dataDir); err != nil {
		t.Fatal(err)
	}
	node := btcdtest.Start(t, again.Options(dataDir))
	tip, height, err := node.BestBlock(ctx)
	if err != nil || tip.String() != s.Tip || height != s.Height {
		t.Fatalf("node on the cached chain: tip %s at %d (%v), want %s at %d", tip, height, err, s.Tip, s.Height)
	}
}

// TestSchnorrSignBIP340 checks the generator's BIP-340 signer against
// btcec's verifier for keys of both Y parities.
func TestSchnorrSignBIP340(t *testing.T) {
	keys := newKeySeq(3)
	first := keys.take(16)
	odd, even := 0, 0
	for i := first; i < first+16; i++ {
		pub := keys.pub(i)
		if got := keys.priv(i).PubKey().SerializeCompressed(); !bytes.Equal(got, pub) {
			t.Fatalf("key %d: public key %x, private key gives %x", i, pub, got)
		}
		if pub[0] == 0x03 {
			odd++
		} else {
			even++
		}
		msg := chainhash.HashB([]byte{byte(i)})
		sig := schnorrSignBIP340(keys.priv(i).Key, pub[0] == 0x03, pub[1:], msg)
		pk, err := schnorr.ParsePubKey(pub[1:])
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := schnorr.ParseSignature(sig[:])
		if err != nil || !parsed.Verify(msg, pk) {
			t.Fatalf("key %d: signature does not verify (%v)", i, err)
		}
	}
	if odd == 0 || even == 0 {
		t.Errorf("keys of one parity only: %d odd, %d even", odd, even)
	}
	if got := txscript.GetScriptClass(mixScript(keys, mixP2TR, first)); got != txscript.WitnessV1TaprootTy {
		t.Errorf("p2tr script class %v", got)
	}
}

// The generator's output counts pick by rank: find returns the height
// holding the k-th output, every output equally likely.
func TestFenwickPicksByRank(t *testing.T) {
	var f fenwick
	counts := map[int]int64{0: 2, 5: 3, 300: 1, 2014: 4}
	for h, n := range counts {
		f.add(h, n)
	}
	want := []int{0, 0, 5, 5, 5, 300, 2014, 2014, 2014, 2014}
	for k, h := range want {
		if got := f.find(int64(k)); got != h {
			t.Errorf("find(%d) = %d, want %d", k, got, h)
		}
	}
	if got := f.prefix(299) - f.prefix(4); got != 3 {
		t.Errorf("outputs at 5..299: %d, want 3", got)
	}
	if got := f.prefix(-1); got != 0 {
		t.Errorf("prefix(-1) = %d", got)
	}
}
