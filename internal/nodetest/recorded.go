package nodetest

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/internal/corefixture"
)

// ExpectedPrevScripts reads the recorded /rest/spenttxouts/<h>.json (or, for
// blocks without it, the prevouts in getblock 3 JSON) — an independent
// decoding of the same data, used as ground truth.
func ExpectedPrevScripts(t *testing.T, b *corefixture.Block) [][]byte {
	t.Helper()
	var out [][]byte
	if b.SpentJSON != nil {
		var txs [][]struct {
			ScriptPubKey struct {
				Hex string `json:"hex"`
			} `json:"scriptPubKey"`
		}
		if err := json.Unmarshal(b.SpentJSON, &txs); err != nil {
			t.Fatal(err)
		}
		for _, tx := range txs {
			for _, o := range tx {
				s, err := hex.DecodeString(o.ScriptPubKey.Hex)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, s)
			}
		}
		return out
	}
	var v struct {
		Tx []struct {
			Vin []struct {
				Prevout *struct {
					ScriptPubKey struct {
						Hex string `json:"hex"`
					} `json:"scriptPubKey"`
				} `json:"prevout"`
			} `json:"vin"`
		} `json:"tx"`
	}
	if err := json.Unmarshal(b.Verbose3, &v); err != nil {
		t.Fatal(err)
	}
	for _, tx := range v.Tx[1:] {
		for _, in := range tx.Vin {
			s, _ := hex.DecodeString(in.Prevout.ScriptPubKey.Hex)
			out = append(out, s)
		}
	}
	return out
}

// MempoolAfterInvalidate is Core's recorded getrawmempool right after the
// reorg's invalidateblock, sorted by CmpHash.
func MempoolAfterInvalidate(t *testing.T, fx *corefixture.Fixtures) []chainhash.Hash {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fx.Dir, "rpc", "reorg", "02b-after-invalidateblock.getrawmempool-sequence.json"))
	if err != nil {
		t.Fatal(err)
	}
	var snap struct {
		Txids []string `json:"txids"`
	}
	if err := json.Unmarshal(raw, &snap); err != nil {
		t.Fatal(err)
	}
	var out []chainhash.Hash
	for _, s := range snap.Txids {
		h, err := chainhash.NewHashFromStr(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, *h)
	}
	slices.SortFunc(out, CmpHash)
	return out
}
