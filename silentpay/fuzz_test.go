package silentpay

import (
	"bytes"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/consensys/gnark-crypto/ecc/secp256k1"
)

// FuzzInputKey feeds arbitrary signature scripts, witnesses and spent
// scripts to the key extraction: it never panics, and whatever key it
// takes the straightforward reading (byte window for P2PKH) takes too,
// and the index's gnark lift takes the same key or none as btcec.
func FuzzInputKey(f *testing.F) {
	g := newTxGen(7)
	for range 40 {
		in, prev := g.input()
		var w []byte
		for _, item := range in.Witness {
			w = append(append(w, byte(len(item))), item...)
		}
		f.Add(in.SignatureScript, w, prev)
	}
	f.Add([]byte{opPushData4, 0xff, 0xff, 0xff, 0xff}, []byte{}, append([]byte{opDup, opHash160, 20}, make([]byte, 22)...))
	f.Fuzz(func(t *testing.T, sig, witness, prev []byte) {
		in := Input{SigScript: sig, PrevScript: prev, Witness: splitWitness(witness)}
		var p btcec.JacobianPoint
		ok := inputKey(&in, &p)
		ref := refInputKey(&wire.TxIn{SignatureScript: sig, Witness: in.Witness}, prev)
		got := serializeCompressed(&p)
		if ok && (ref == nil || !bytes.Equal(got[:], ref.SerializeCompressed())) {
			t.Fatalf("took key %x, the straightforward reading %v", got, ref)
		}
		if !ok && ref != nil && !isP2PKH(prev) {
			t.Fatalf("took no key, the straightforward reading %x", ref.SerializeCompressed())
		}
		var q secp256k1.G1Affine
		k, refOK := inputKeyRef(&in)
		if gOK := refOK && gLiftX(k.x, k.odd, &q); gOK != ok || (ok && gSerializeCompressed(&q) != got) {
			t.Fatalf("gnark lifts %v %x, btcec %v %x", gOK, gSerializeCompressed(&q), ok, got)
		}
	})
}

// splitWitness cuts fuzz bytes into witness items: each item is led by a
// length byte.
func splitWitness(b []byte) [][]byte {
	var items [][]byte
	for len(b) > 0 {
		n := min(int(b[0]), len(b)-1)
		items = append(items, b[1:1+n])
		b = b[1+n:]
	}
	return items
}

// FuzzParseTweakData: untrusted tweak data never panics; what parses
// serializes back to the same bytes (the form is canonical).
func FuzzParseTweakData(f *testing.F) {
	f.Add([]byte{0})
	f.Add(AppendTweakData(nil, []TxTweak{{TxIndex: 3, Tweak: Tweak{Point: [33]byte{2}, MaxTaprootValue: 600}}}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		tw, err := ParseTweakData(data)
		if err != nil {
			if !errors.Is(err, ErrMalformedTweakData) {
				t.Fatalf("error %v does not wrap ErrMalformedTweakData", err)
			}
			return
		}
		if back := AppendTweakData(nil, tw); !bytes.Equal(back, data) {
			t.Fatalf("parsed %x, serialized back %x", data, back)
		}
	})
}

// FuzzBuild: arbitrary block bytes never panic Build, and when wire
// decodes the same bytes as one block, both readings give the same Block.
func FuzzBuild(f *testing.F) {
	g := newTxGen(8)
	for n := range 4 {
		msg, _ := g.block(n, chainhash.Hash{})
		f.Add(serializeBlock(f, msg))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var bb BlockBuilder
		var msg wire.MsgBlock
		decoded := msg.Deserialize(bytes.NewReader(raw)) == nil
		var prev [][]byte
		for i, tx := range msg.Transactions {
			for range tx.TxIn {
				if i > 0 {
					prev = append(prev, taprootScript(make([]byte, 32)))
				}
			}
		}
		blk, err := bb.Build(raw, prev)
		if err != nil {
			if !errors.Is(err, ErrMalformedBlock) && !errors.Is(err, ErrPrevScriptCount) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		if !decoded || serializeSize(&msg) != len(raw) {
			return
		}
		viaWire, err := bb.BuildMsgBlock(&msg, prev)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(blk.Filter, viaWire.Filter) || len(blk.Tweaks) != len(viaWire.Tweaks) {
			t.Fatalf("in place and decoded differ")
		}
	})
}

func serializeSize(b *wire.MsgBlock) int {
	var buf bytes.Buffer
	_ = b.Serialize(&buf)
	return buf.Len()
}
