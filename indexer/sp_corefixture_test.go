package indexer

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/blockfiles"
	"github.com/cfindexd/cfindexd/internal/corefiles"
	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/nodeclient"
	"github.com/cfindexd/cfindexd/prevouts"
	"github.com/cfindexd/cfindexd/silentpay"
)

// fixtureChainNode plays the node for the recorded Core v31 blocks
// directory, which has no node: its active chain is the hashes it is
// given (chain.json's), switchable to follow a reorg.
type fixtureChainNode struct {
	chain []*corefiles.FixtureBlock // by height
}

func (n *fixtureChainNode) GetBestBlockHash(context.Context) (chainhash.Hash, error) {
	return n.chain[len(n.chain)-1].Hash, nil
}

func (n *fixtureChainNode) GetBlockHash(_ context.Context, height int64) (chainhash.Hash, error) {
	if height < 0 || height >= int64(len(n.chain)) {
		return chainhash.Hash{}, fmt.Errorf("height %d out of range", height)
	}
	return n.chain[height].Hash, nil
}

func (n *fixtureChainNode) GetBlockHeaderVerbose(_ context.Context, hash chainhash.Hash) (nodeclient.HeaderInfo, error) {
	for i, b := range n.chain {
		if b.Hash == hash {
			return nodeclient.HeaderInfo{Hash: hash, Height: uint32(i), PrevHash: b.Prev, Confirmations: int64(len(n.chain) - i)}, nil
		}
	}
	return nodeclient.HeaderInfo{}, fmt.Errorf("block %s not on the active chain", hash)
}

// coreSpentTxOuts parses a REST /rest/spenttxouts/<hash>.bin body:
// compactsize(txs), then per tx compactsize(n) and n CTxOut. It is the
// test's own reader, sharing nothing with prevouts' REST source.
func coreSpentTxOuts(body []byte) ([][]wire.TxOut, error) {
	r := bytes.NewReader(body)
	ntx, err := wire.ReadVarInt(r, 0)
	if err != nil || ntx > uint64(len(body)) {
		return nil, fmt.Errorf("tx count %d: %v", ntx, err)
	}
	out := make([][]wire.TxOut, ntx)
	for i := range out {
		n, err := wire.ReadVarInt(r, 0)
		if err != nil || n > uint64(r.Len()) {
			return nil, fmt.Errorf("tx %d: count %d: %v", i, n, err)
		}
		for range n {
			var v [8]byte
			if _, err := io.ReadFull(r, v[:]); err != nil {
				return nil, fmt.Errorf("tx %d: value: %w", i, err)
			}
			l, err := wire.ReadVarInt(r, 0)
			if err != nil || l > uint64(r.Len()) {
				return nil, fmt.Errorf("tx %d: script length %d: %v", i, l, err)
			}
			script := make([]byte, l)
			if _, err := io.ReadFull(r, script); err != nil {
				return nil, err
			}
			out[i] = append(out[i], wire.TxOut{Value: int64(binary.LittleEndian.Uint64(v[:])), PkScript: script})
		}
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%d bytes after the last tx", r.Len())
	}
	return out, nil
}

// numsX is BIP-341's NUMS point H (x-only), written out here rather than
// taken from package silentpay.
var numsX, _ = hex.DecodeString("50929b74c1a04954b78b4b6035e97a5e078a5a0f28ec96d547bfee9ace803ac0")

// spendsNUMSScriptPath tells whether in spends a taproot output by a
// script path whose control block names NUMS point H as internal key.
func spendsNUMSScriptPath(in *silentpay.Input) bool {
	w := in.Witness
	if !silentpay.IsTaproot(in.PrevScript) || len(w) < 2 {
		return false
	}
	if last := w[len(w)-1]; len(last) > 0 && last[0] == 0x50 { // annex
		w = w[:len(w)-1]
	}
	if len(w) < 2 {
		return false
	}
	cb := w[len(w)-1]
	return len(cb) >= 33 && bytes.Equal(cb[1:33], numsX)
}

// spFixtureCounts tallies what the fixture chain holds for BIP-352.
type spFixtureCounts struct {
	tweaked          int // transactions with a tweak
	taprootExcluded  int // a taproot output but no tweak
	numsOnly         int // of those, every input with a key-like spend is a NUMS script path
	numsInputs       int // inputs spending a NUMS script path
	noTaprootOutput  int // an input BIP-352 takes a key from, but no taproot output
	nonZeroMaxValues int // tweaks whose largest taproot value is not zero
}

// fixtureTweaks computes the tweaks of blk with silentpay.ComputeTweak
// from Core's own spent outputs (spenttxouts), one transaction at a time,
// and tallies the fixture's cases into c.
func fixtureTweaks(t *testing.T, blk *wire.MsgBlock, spent [][]wire.TxOut, c *spFixtureCounts) ([]silentpay.TxTweak, [][]byte) {
	t.Helper()
	if len(spent) != len(blk.Transactions) {
		t.Fatalf("block %s: spenttxouts for %d txs, block has %d", blk.BlockHash(), len(spent), len(blk.Transactions))
	}
	var tweaks []silentpay.TxTweak
	var prevScripts [][]byte
	for i, tx := range blk.Transactions[1:] {
		outs := spent[i+1]
		if len(outs) != len(tx.TxIn) {
			t.Fatalf("block %s tx %d: %d spent outputs for %d inputs", blk.BlockHash(), i+1, len(outs), len(tx.TxIn))
		}
		ins := make([]silentpay.Input, len(tx.TxIn))
		keyed, nums := 0, 0
		for j, in := range tx.TxIn {
			ins[j] = silentpay.Input{OutPoint: in.PreviousOutPoint, SigScript: in.SignatureScript, Witness: in.Witness, PrevScript: outs[j].PkScript}
			prevScripts = append(prevScripts, outs[j].PkScript)
			if spendsNUMSScriptPath(&ins[j]) {
				nums++
				if _, ok := silentpay.InputPublicKey(&ins[j]); ok {
					t.Fatalf("block %s tx %d input %d: a NUMS script-path spend gave a key", blk.BlockHash(), i+1, j)
				}
			}
			if _, ok := silentpay.InputPublicKey(&ins[j]); ok {
				keyed++
			}
		}
		c.numsInputs += nums
		taproot := false
		txOuts := make([]silentpay.Output, len(tx.TxOut))
		for j, o := range tx.TxOut {
			txOuts[j] = silentpay.Output{Value: uint64(o.Value), Script: o.PkScript}
			taproot = taproot || silentpay.IsTaproot(o.PkScript)
		}
		tw, ok := silentpay.ComputeTweak(ins, txOuts)
		switch {
		case ok:
			c.tweaked++
			if tw.MaxTaprootValue != 0 {
				c.nonZeroMaxValues++
			}
			tweaks = append(tweaks, silentpay.TxTweak{TxIndex: uint32(i + 1), Tweak: tw})
		case taproot:
			c.taprootExcluded++
			if nums > 0 && keyed == 0 {
				c.numsOnly++
			}
		case keyed > 0:
			c.noTaprootOutput++
		}
	}
	return tweaks, prevScripts
}

// TestSilentPaymentIndexOnCoreBlocksDir indexes every block of the
// recorded Bitcoin Core v31 blocks directory (testdata/bitcoind-v31-blocksdir)
// with the silent-payment index on, through the daemon's own path for
// Core's files: indexer.Follower over prevouts' blocks-dir source (blk and
// rev files read in place, no fallback). The node first shows the stale
// branch (196, then stale 197–199), then the active chain (197–200), so
// the follower reorganises the index onto Core's active chain and all 204
// blocks go through it. After each sync, every indexed block's tweaks and
// largest taproot values must equal silentpay.ComputeTweak run per
// transaction on Core's own spent outputs (the recorded REST
// spenttxouts, a source the blocks-dir reader did not produce), and the
// whole index — tweak data, taproot filters, commitment chain — must
// equal the one built from those spent outputs.
func TestSilentPaymentIndexOnCoreBlocksDir(t *testing.T) {
	fx := corefiles.LoadFixture(t)
	stored, err := fx.StoredBlocks()
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[chainhash.Hash]*wire.MsgBlock{}
	for _, b := range stored {
		blocks[b.BlockHash()] = b
	}
	active := fx.ActiveChain()
	staleChain := append([]*corefiles.FixtureBlock(nil), active[:197]...)
	for _, b := range fx.Blocks {
		if !b.Active {
			staleChain = append(staleChain, b)
		}
	}
	if len(staleChain) != 200 || staleChain[199].Height != 199 || staleChain[197].Prev != active[196].Hash {
		t.Fatalf("the fixture's stale branch is not 197..199 on active 196")
	}

	// The independent side: per block, tweaks from ComputeTweak on Core's
	// spent outputs, and those outputs' scripts for spEntries.
	want := map[chainhash.Hash][]silentpay.TxTweak{}
	prevs := map[chainhash.Hash][][]byte{}
	var counts spFixtureCounts
	for _, b := range fx.Blocks {
		blk, ok := blocks[b.Hash]
		if !ok {
			t.Fatalf("h%d %s: not in blk00000.dat", b.Height, b.Hash)
		}
		spent, err := coreSpentTxOuts(b.SpentTxOuts)
		if err != nil {
			t.Fatalf("h%d %s spenttxouts: %v", b.Height, b.Hash, err)
		}
		c := &counts
		if !b.Active {
			c = &spFixtureCounts{} // tally the active chain only
		}
		want[b.Hash], prevs[b.Hash] = fixtureTweaks(t, blk, spent, c)
	}
	t.Logf("active chain: %d txs with a tweak (%d with a non-zero largest taproot value); excluded: %d with a taproot output (%d of them spending only NUMS script paths among key-like inputs), %d with keys but no taproot output; %d NUMS script-path inputs",
		counts.tweaked, counts.nonZeroMaxValues, counts.taprootExcluded, counts.numsOnly, counts.noTaprootOutput, counts.numsInputs)
	for _, c := range []struct {
		name string
		n    int
	}{
		{"transactions with a tweak", counts.tweaked},
		{"tweaks with a non-zero largest taproot value", counts.nonZeroMaxValues},
		{"transactions with a taproot output and no tweak", counts.taprootExcluded},
		{"transactions with key inputs and no taproot output", counts.noTaprootOutput},
		{"NUMS script-path inputs", counts.numsInputs},
		{"transactions excluded for spending only NUMS script paths", counts.numsOnly},
	} {
		if c.n == 0 {
			t.Errorf("the fixture's active chain has no %s", c.name)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(3*time.Minute))
	defer cancel()
	log := testLogger(t)
	dir, err := blockfiles.Open(fx.BlocksDir, fx.Params.Net, log)
	if err != nil {
		t.Fatal(err)
	}
	src := prevouts.NewBlocksDirSource(dir, nil, log)
	defer src.Close()
	st := openStore(t, *fx.Params.GenesisHash)
	x := st.SilentPayments()
	if _, err := x.Enable(1); err != nil {
		t.Fatal(err)
	}
	node := &fixtureChainNode{}
	fl := NewFollower(Config{Genesis: *fx.Params.GenesisHash, Workers: 2, BatchBlocks: 64, ReorgSettle: -1, SilentPayments: x},
		node, src, st, nil, nil, log)

	for _, step := range []struct {
		name  string
		chain []*corefiles.FixtureBlock
	}{
		{"stale branch", staleChain},
		{"active chain after the reorg", active},
	} {
		node.chain = step.chain
		if err := fl.Sync(ctx); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		tip, ok := st.Tip()
		top := step.chain[len(step.chain)-1]
		if !ok || tip.Hash != top.Hash {
			t.Fatalf("%s: store tip %+v, want %d %s", step.name, tip, top.Height, top.Hash)
		}
		var msgs []*wire.MsgBlock
		var ps [][][]byte
		for _, b := range step.chain[1:] {
			msgs, ps = append(msgs, blocks[b.Hash]), append(ps, prevs[b.Hash])
		}
		checkSPIndex(t, x, spEntries(t, msgs, ps))
		recs, err := x.TweakData(1, uint32(top.Height))
		if err != nil {
			t.Fatal(err)
		}
		for i, rec := range recs {
			b := step.chain[i+1]
			got, err := silentpay.ParseTweakData(rec.TweakData)
			if err != nil {
				t.Fatalf("%s h%d: %v", step.name, b.Height, err)
			}
			if rec.BlockHash != b.Hash || len(got) != len(want[b.Hash]) {
				t.Fatalf("%s h%d: index has block %s with %d tweaks, want %s with %d", step.name, b.Height, rec.BlockHash, len(got), b.Hash, len(want[b.Hash]))
			}
			for j, tw := range got {
				if tw != want[b.Hash][j] {
					t.Errorf("%s h%d tweak %d: index %d %x value %d, Core's prevouts give %d %x value %d", step.name, b.Height, j,
						tw.TxIndex, tw.Point, tw.MaxTaprootValue, want[b.Hash][j].TxIndex, want[b.Hash][j].Point, want[b.Hash][j].MaxTaprootValue)
				}
			}
		}
	}
	if files, fallback := src.BlockCounts(); files < 204 || fallback != 0 {
		t.Errorf("%d blocks from the files, %d from a fallback; want all 204 from the files", files, fallback)
	}
}

var _ Node = (*fixtureChainNode)(nil)
