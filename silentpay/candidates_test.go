package silentpay

import (
	"encoding/hex"
	"errors"
	"slices"
	"testing"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestCandidatesAgreeWithEveryOfficialVector holds the light-client test
// against BIP-352's receiving vectors: a transaction pays the wallet
// exactly when one of the candidates of its tweak is among its outputs
// (the k = 0 output, labeled or not), every candidate found is one of the
// vector's expected outputs, and there is one candidate for the bare
// address and one per distinct label, the change label included.
func TestCandidatesAgreeWithEveryOfficialVector(t *testing.T) {
	checked := 0
	for _, c := range loadBIP352(t) {
		for _, r := range c.Receiving {
			if r.Expected.Tweak == "" {
				continue
			}
			t.Run(c.Comment, func(t *testing.T) {
				scanKey, _ := btcec.PrivKeyFromBytes(mustHex(t, r.Given.KeyMaterial.ScanPrivKey))
				_, spendKey := btcec.PrivKeyFromBytes(mustHex(t, r.Given.KeyMaterial.SpendPrivKey))
				sc, err := NewScanner(scanKey, spendKey, r.Given.Labels)
				if err != nil {
					t.Fatal(err)
				}
				cands, err := sc.Candidates([33]byte(mustHex(t, r.Expected.Tweak)))
				if err != nil {
					t.Fatal(err)
				}
				labels := []uint32{ChangeLabel}
				for _, m := range r.Given.Labels {
					if !slices.Contains(labels, m) {
						labels = append(labels, m)
					}
				}
				if len(cands) != 1+len(labels) {
					t.Fatalf("%d candidates for %d labels (change included), want %d", len(cands), len(labels), 1+len(labels))
				}
				expected := map[string]bool{}
				for _, o := range r.Expected.Outputs {
					expected[o.PubKey] = true
				}
				hits := 0
				for _, o := range r.Given.Outputs {
					if !slices.Contains(cands, [32]byte(mustHex(t, o))) {
						continue
					}
					hits++
					if r.Expected.NOutputs == nil && !expected[o] {
						t.Fatalf("candidate %s is an output the vector does not pay the wallet", o)
					}
				}
				paid := len(r.Expected.Outputs) > 0 || (r.Expected.NOutputs != nil && *r.Expected.NOutputs > 0)
				if paid != (hits > 0) {
					t.Fatalf("the vector pays the wallet: %v; outputs among the candidates: %d", paid, hits)
				}
				checked++
			})
		}
	}
	if checked == 0 {
		t.Fatal("no receiving vector with a tweak")
	}
}

// TestCandidatesAreTheKZeroOutputs: for a send made with OutputKeys to the
// bare address and to labeled addresses (two outputs each, k = 0 and 1),
// the k = 0 keys are candidates, in NewScanner's label order, and the
// k = 1 keys are not.
func TestCandidatesAreTheKZeroOutputs(t *testing.T) {
	priv := func(b byte) *btcec.PrivateKey {
		k, _ := btcec.PrivKeyFromBytes(slices.Repeat([]byte{b}, 32))
		return k
	}
	scan, spend := priv(0x11), priv(0x22)
	labels := []uint32{7, 3, 7}
	sc, err := NewScanner(scan, spend.PubKey(), labels)
	if err != nil {
		t.Fatal(err)
	}
	keys := []SenderKey{{Key: priv(0x33)}, {Key: priv(0x44), Taproot: true}}
	outpoints := testOutPoints(2)
	for _, tc := range []struct {
		name  string
		label int64 // -1: the bare address
		index int   // position among the candidates
	}{{"bare", -1, 0}, {"change", ChangeLabel, 1}, {"label 7", 7, 2}, {"label 3", 3, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			spendPub := spend.PubKey()
			if tc.label >= 0 {
				tw, err := LabelTweak(scan, uint32(tc.label))
				if err != nil {
					t.Fatal(err)
				}
				var l btcec.ModNScalar
				l.SetBytes(&tw)
				d := spend.Key
				d.Add(&l)
				spendPub = btcec.PrivKeyFromScalar(&d).PubKey()
			}
			r := Recipient{Scan: scan.PubKey(), Spend: spendPub}
			outs, err := OutputKeys(keys, outpoints, []Recipient{r, r})
			if err != nil {
				t.Fatal(err)
			}
			tweak := senderTweak(t, keys, outpoints)
			cands, err := sc.Candidates(tweak)
			if err != nil {
				t.Fatal(err)
			}
			if len(cands) != 4 {
				t.Fatalf("%d candidates, want 4 (bare, change, 7, 3)", len(cands))
			}
			if cands[tc.index] != outs[0] {
				t.Fatalf("candidate %d is %x, the k = 0 output %x", tc.index, cands[tc.index], outs[0])
			}
			if slices.Contains(cands, outs[1]) {
				t.Fatalf("the k = 1 output %x is a candidate", outs[1])
			}
		})
	}
}

func TestCandidatesRefuseBadTweaks(t *testing.T) {
	scan, spend := btcec.PrivKeyFromBytes(slices.Repeat([]byte{1}, 32))
	sc, err := NewScanner(scan, spend, nil)
	if err != nil {
		t.Fatal(err)
	}
	offCurve := [33]byte{0x02}
	for x := byte(1); ; x++ { // the first small x with no y on secp256k1
		offCurve[32] = x
		if _, err := btcec.ParsePubKey(offCurve[:]); err != nil {
			break
		}
	}
	for _, tc := range []struct {
		name  string
		tweak [33]byte
	}{
		{"zero", [33]byte{}},
		{"prefix 04", [33]byte{0x04, 1}},
		{"x not on the curve", offCurve},
		{"x above the field prime", [33]byte(mustHex(t, "02"+hex.EncodeToString(slices.Repeat([]byte{0xff}, 32))))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := sc.Candidates(tc.tweak); !errors.Is(err, ErrInvalidTweak) {
				t.Fatalf("error %v, want ErrInvalidTweak", err)
			}
		})
	}
}

// testOutPoints returns n distinct outpoints of made-up transactions.
func testOutPoints(n int) []wire.OutPoint {
	ops := make([]wire.OutPoint, n)
	for i := range ops {
		ops[i] = wire.OutPoint{Hash: chainhash.HashH([]byte{byte(i)}), Index: uint32(i)}
	}
	return ops
}

// senderTweak is the receiver's view of a send from keys spending
// outpoints: the tweak ComputeTweak takes from the inputs (a P2WPKH input
// for a key without Taproot, a key-path P2TR input for one with), as a
// tweak server would serve it.
func senderTweak(t *testing.T, keys []SenderKey, outpoints []wire.OutPoint) [TweakSize]byte {
	t.Helper()
	ins := make([]Input, len(keys))
	for i, k := range keys {
		pub := k.Key.PubKey()
		ins[i].OutPoint = outpoints[i]
		if k.Taproot {
			ins[i].PrevScript = taprootScript(schnorr.SerializePubKey(pub))
			ins[i].Witness = [][]byte{make([]byte, 64)}
			continue
		}
		ins[i].PrevScript = append([]byte{0x00, 0x14}, address.Hash160(pub.SerializeCompressed())...)
		ins[i].Witness = [][]byte{make([]byte, 71), pub.SerializeCompressed()}
	}
	tw, ok := ComputeTweak(ins, []Output{{Value: 1000, Script: taprootScript(make([]byte, 32))}})
	if !ok {
		t.Fatal("the send has no tweak")
	}
	return tw.Point
}
