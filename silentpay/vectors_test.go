package silentpay

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// bip352Case is one case of the official BIP-352 vectors
// (testdata/bip352/send_and_receive_test_vectors.json).
type bip352Case struct {
	Comment string `json:"comment"`
	Sending []struct {
		Given struct {
			Vin        []vectorVin `json:"vin"`
			Recipients []struct {
				ScanPubKey  string `json:"scan_pub_key"`
				SpendPubKey string `json:"spend_pub_key"`
			} `json:"recipients"`
		} `json:"given"`
		Expected struct {
			Outputs      [][]string `json:"outputs"`
			InputPubKeys []string   `json:"input_pub_keys"`
			NOutputs     *int       `json:"n_outputs"`
		} `json:"expected"`
	} `json:"sending"`
	Receiving []struct {
		Given struct {
			Vin         []vectorVin `json:"vin"`
			Outputs     []string    `json:"outputs"`
			KeyMaterial struct {
				SpendPrivKey string `json:"spend_priv_key"`
				ScanPrivKey  string `json:"scan_priv_key"`
			} `json:"key_material"`
			Labels []uint32 `json:"labels"`
		} `json:"given"`
		Expected struct {
			Outputs []struct {
				PubKey       string `json:"pub_key"`
				PrivKeyTweak string `json:"priv_key_tweak"`
			} `json:"outputs"`
			NOutputs *int   `json:"n_outputs"`
			Tweak    string `json:"tweak"`
		} `json:"expected"`
	} `json:"receiving"`
}

type vectorVin struct {
	Txid        string `json:"txid"`
	Vout        uint32 `json:"vout"`
	ScriptSig   string `json:"scriptSig"`
	TxInWitness string `json:"txinwitness"`
	Prevout     struct {
		ScriptPubKey struct {
			Hex string `json:"hex"`
		} `json:"scriptPubKey"`
	} `json:"prevout"`
	PrivateKey string `json:"private_key"`
}

func loadBIP352(t testing.TB) []bip352Case {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "bip352", "send_and_receive_test_vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []bip352Case
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) != 28 {
		t.Fatalf("%d cases, the manifest promises 28", len(cases))
	}
	return cases
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("hex %q: %v", s, err)
	}
	return b
}

// vectorInput turns a vector's vin (getrawtransaction's shape, the witness
// serialized as in a transaction) into an Input.
func vectorInput(t testing.TB, v vectorVin) Input {
	t.Helper()
	h, err := chainhash.NewHashFromStr(v.Txid)
	if err != nil {
		t.Fatal(err)
	}
	in := Input{
		OutPoint:   wire.OutPoint{Hash: *h, Index: v.Vout},
		SigScript:  mustHex(t, v.ScriptSig),
		PrevScript: mustHex(t, v.Prevout.ScriptPubKey.Hex),
	}
	if w := mustHex(t, v.TxInWitness); len(w) > 0 {
		r := wirescan.NewReader(w)
		n, err := r.Count(1)
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			item, err := r.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			in.Witness = append(in.Witness, item)
		}
		if err := r.End(); err != nil {
			t.Fatal(err)
		}
	}
	return in
}

// taprootScript is the output script paying x-only key x.
func taprootScript(x []byte) []byte {
	return append([]byte{op1, xOnlySize}, x...)
}

func TestTweakMatchesEveryOfficialVector(t *testing.T) {
	for _, c := range loadBIP352(t) {
		for i, r := range c.Receiving {
			t.Run(c.Comment, func(t *testing.T) {
				ins := make([]Input, len(r.Given.Vin))
				for j, v := range r.Given.Vin {
					ins[j] = vectorInput(t, v)
				}
				outs := make([]Output, len(r.Given.Outputs))
				for j, o := range r.Given.Outputs {
					outs[j] = Output{Value: uint64(1000 + j), Script: taprootScript(mustHex(t, o))}
				}
				tw, ok := TxTweak(ins, outs)
				if r.Expected.Tweak == "" {
					if ok {
						t.Fatalf("receiving %d: tweak %x, the vector has none", i, tw.Point)
					}
					return
				}
				if !ok {
					t.Fatalf("receiving %d: no tweak, want %s", i, r.Expected.Tweak)
				}
				if got := hex.EncodeToString(tw.Point[:]); got != r.Expected.Tweak {
					t.Fatalf("receiving %d: tweak %s, want %s", i, got, r.Expected.Tweak)
				}
				if want := uint64(1000 + len(outs) - 1); tw.MaxTaprootValue != want {
					t.Fatalf("max taproot value %d, want %d", tw.MaxTaprootValue, want)
				}
			})
		}
	}
}
