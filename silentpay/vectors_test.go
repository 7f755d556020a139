package silentpay

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
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
				Count       int    `json:"count"` // the recipient repeated, when set
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
				tw, ok := ComputeTweak(ins, outs)
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

func TestScanFindsExactlyTheVectorOutputs(t *testing.T) {
	for _, c := range loadBIP352(t) {
		for _, r := range c.Receiving {
			if r.Expected.Tweak == "" {
				continue // TestTweakMatchesEveryOfficialVector: nothing to scan
			}
			t.Run(c.Comment, func(t *testing.T) {
				scanKey, _ := btcec.PrivKeyFromBytes(mustHex(t, r.Given.KeyMaterial.ScanPrivKey))
				spendPriv, spendKey := btcec.PrivKeyFromBytes(mustHex(t, r.Given.KeyMaterial.SpendPrivKey))
				sc, err := NewScanner(scanKey, spendKey, r.Given.Labels)
				if err != nil {
					t.Fatal(err)
				}
				outputs := make([][32]byte, len(r.Given.Outputs))
				for i, o := range r.Given.Outputs {
					outputs[i] = [32]byte(mustHex(t, o))
				}
				found, err := sc.Scan([33]byte(mustHex(t, r.Expected.Tweak)), outputs)
				if err != nil {
					t.Fatal(err)
				}
				if r.Expected.NOutputs != nil { // K_max case: the count, and each one found is sound
					if len(found) != *r.Expected.NOutputs {
						t.Fatalf("found %d outputs, want %d", len(found), *r.Expected.NOutputs)
					}
				} else {
					want := map[string]string{}
					for _, o := range r.Expected.Outputs {
						want[o.PubKey] = o.PrivKeyTweak
					}
					if len(found) != len(want) {
						t.Fatalf("found %d outputs, want %d", len(found), len(want))
					}
					for _, m := range found {
						tw, ok := want[hex.EncodeToString(m.Key[:])]
						if !ok {
							t.Fatalf("found %x, not among the expected outputs", m.Key)
						}
						if got := hex.EncodeToString(m.PrivKeyTweak[:]); got != tw {
							t.Fatalf("output %x: tweak %s, want %s", m.Key, got, tw)
						}
					}
				}
				for _, m := range found {
					assertSpendable(t, spendPriv, m)
				}
			})
		}
	}
}

// assertSpendable checks that b_spend + tweak is the private key of the
// found output (its x-only public key is the output key).
func assertSpendable(t *testing.T, spend *btcec.PrivateKey, m Match) {
	t.Helper()
	var tw btcec.ModNScalar
	tw.SetBytes(&m.PrivKeyTweak)
	d := spend.Key
	d.Add(&tw)
	pub := btcec.PrivKeyFromScalar(&d).PubKey().SerializeCompressed()
	if [32]byte(pub[1:]) != m.Key {
		t.Fatalf("b_spend + tweak gives %x, output is %x", pub[1:], m.Key)
	}
}

func TestOutputKeysMatchTheVectorSends(t *testing.T) {
	for _, c := range loadBIP352(t) {
		for _, s := range c.Sending {
			t.Run(c.Comment, func(t *testing.T) {
				var keys []SenderKey
				var pubs []string
				outpoints := make([]wire.OutPoint, len(s.Given.Vin))
				for i, v := range s.Given.Vin {
					in := vectorInput(t, v)
					outpoints[i] = in.OutPoint
					pub, ok := InputPublicKey(&in)
					if !ok {
						continue
					}
					pubs = append(pubs, hex.EncodeToString(pub.SerializeCompressed()))
					priv, _ := btcec.PrivKeyFromBytes(mustHex(t, v.PrivateKey))
					keys = append(keys, SenderKey{Key: priv, Taproot: IsTaproot(in.PrevScript)})
				}
				if len(pubs) != len(s.Expected.InputPubKeys) {
					t.Fatalf("eligible input keys %v, want %v", pubs, s.Expected.InputPubKeys)
				}
				for i := range pubs {
					if pubs[i] != s.Expected.InputPubKeys[i] {
						t.Fatalf("input key %d: %s, want %s", i, pubs[i], s.Expected.InputPubKeys[i])
					}
				}
				var recipients []Recipient
				for _, r := range s.Given.Recipients {
					scan, err := btcec.ParsePubKey(mustHex(t, r.ScanPubKey))
					if err != nil {
						t.Fatal(err)
					}
					spend, err := btcec.ParsePubKey(mustHex(t, r.SpendPubKey))
					if err != nil {
						t.Fatal(err)
					}
					for range max(r.Count, 1) {
						recipients = append(recipients, Recipient{Scan: scan, Spend: spend})
					}
				}
				got, err := OutputKeys(keys, outpoints, recipients)
				wantNone := len(s.Expected.Outputs) == 0 || len(s.Expected.Outputs[0]) == 0
				if wantNone {
					if !errors.Is(err, ErrNoInputKeys) && !errors.Is(err, ErrTooManyRecipients) {
						t.Fatalf("sent %d outputs (error %v), the vector sends none", len(got), err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				gotSet := map[string]bool{}
				for _, k := range got {
					gotSet[hex.EncodeToString(k[:])] = true
				}
				for _, set := range s.Expected.Outputs {
					if len(set) != len(gotSet) {
						continue
					}
					all := true
					for _, o := range set {
						all = all && gotSet[o]
					}
					if all {
						return
					}
				}
				t.Fatalf("outputs %v match none of the expected sets", gotSet)
			})
		}
	}
}
