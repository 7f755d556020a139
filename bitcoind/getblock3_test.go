package bitcoind

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/cfindexd/cfindexd/internal/corefixture"
)

func TestParseVerboseBlockFixtures(t *testing.T) {
	fx := corefixture.Load(t)
	for _, b := range fx.Blocks {
		blk, prev, err := ParseVerboseBlock(b.Verbose3, b.Hash)
		if err != nil {
			t.Fatalf("%s: %v", b.Name(), err)
		}
		if !bytes.Equal(serializeBlock(t, blk), b.Raw) {
			t.Errorf("%s: rebuilt block differs from getblock 0", b.Name())
		}
		if !equalScripts(prev, expectedPrevScripts(t, b)) {
			t.Errorf("%s: prevScripts differ", b.Name())
		}
	}
}

func TestParseVerboseBlockRejects(t *testing.T) {
	fx := corefixture.Load(t)
	b, _ := fx.BlockByHash(fx.Tip)
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(b.Verbose3, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		out, _ := json.Marshal(m)
		return out
	}
	txs := func(m map[string]any) []any { return m["tx"].([]any) }
	for _, tt := range []struct {
		name string
		data []byte
		hash chainhash.Hash
		want error
	}{
		{"wrong hash asked", b.Verbose3, chainhash.Hash{1}, ErrMalformed},
		{"not json", []byte("{"), b.Hash, ErrMalformed},
		{"nonce changed", edit(func(m map[string]any) { m["nonce"] = 12345.0 }), b.Hash, ErrMalformed},
		{"tx dropped", edit(func(m map[string]any) { m["tx"] = txs(m)[:2] }), b.Hash, ErrMalformed},
		{"tx hex altered", edit(func(m map[string]any) {
			tx := txs(m)[1].(map[string]any)
			h := tx["hex"].(string)
			tx["hex"] = h[:len(h)-2] + "01"
		}), b.Hash, ErrMalformed},
		{"vin count differs", edit(func(m map[string]any) {
			tx := txs(m)[1].(map[string]any)
			tx["vin"] = append(tx["vin"].([]any), tx["vin"].([]any)[0])
		}), b.Hash, ErrMalformed},
		{"prevout missing (pruned undo)", edit(func(m map[string]any) {
			vin := txs(m)[1].(map[string]any)["vin"].([]any)[0].(map[string]any)
			delete(vin, "prevout")
		}), b.Hash, ErrPruned},
		{"no coinbase", edit(func(m map[string]any) {
			delete(txs(m)[0].(map[string]any)["vin"].([]any)[0].(map[string]any), "coinbase")
		}), b.Hash, ErrMalformed},
	} {
		if _, _, err := ParseVerboseBlock(tt.data, tt.hash); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
}

func FuzzParseVerboseBlock(f *testing.F) {
	fx := corefixture.Load(f)
	hashes := map[string]chainhash.Hash{}
	for _, b := range fx.Blocks {
		if len(b.Verbose3) < 8000 {
			f.Add(b.Verbose3)
		}
		hashes[b.Hash.String()] = b.Hash
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Ask for the hash the JSON claims, so the fuzzer can reach past the
		// header check.
		var h struct {
			Hash string `json:"hash"`
		}
		_ = json.Unmarshal(data, &h)
		want, ok := hashes[strings.ToLower(h.Hash)]
		if !ok {
			want = chainhash.Hash{}
		}
		blk, prev, err := ParseVerboseBlock(data, want)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrPruned) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		if blk.BlockHash() != want {
			t.Fatalf("accepted a block with the wrong hash")
		}
		if merkleRoot(blk.Transactions) != blk.Header.MerkleRoot {
			t.Fatalf("accepted a block whose transactions do not match the merkle root")
		}
		n := 0
		for _, tx := range blk.Transactions[1:] {
			n += len(tx.TxIn)
		}
		if n != len(prev) {
			t.Fatalf("%d prevScripts for %d inputs", len(prev), n)
		}
	})
}
