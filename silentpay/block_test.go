package silentpay

import (
	"bytes"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/cfindexd/cfindexd/gcs"
)

func serializeBlock(t testing.TB, b *wire.MsgBlock) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := b.Serialize(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestTweakAgreesWithStraightforwardReading: on generated transactions of
// every input kind, ComputeTweakMsg equals refTweak, and both kinds of
// answer (a tweak, none) occur.
func TestTweakAgreesWithStraightforwardReading(t *testing.T) {
	g := newTxGen(1)
	with, without := 0, 0
	for range 3000 {
		tx, prev := g.tx()
		tw, ok, err := ComputeTweakMsg(tx, prev)
		if err != nil {
			t.Fatal(err)
		}
		ref, refMax, refOK := refTweak(tx, prev)
		if ok != refOK || (ok && (tw.Point != ref || tw.MaxTaprootValue != refMax)) {
			t.Fatalf("tx %s: tweak %x %d %v, reference %x %d %v", tx.TxHash(), tw.Point, tw.MaxTaprootValue, ok, ref, refMax, refOK)
		}
		if ok {
			with++
		} else {
			without++
		}
	}
	if with < 500 || without < 500 {
		t.Fatalf("%d transactions with a tweak, %d without: the generator misses a case", with, without)
	}
}

// TestBuildReadsBlocksAsDecoded: Build (in place) and BuildMsgBlock (wire)
// give the same Block; the tweaks are those of the transactions one by one,
// the coinbase never has one, and the filter holds the taproot outputs of
// the transactions with a tweak.
func TestBuildReadsBlocksAsDecoded(t *testing.T) {
	g := newTxGen(2)
	var bb BlockBuilder
	for n := range 40 {
		msg, prev := g.block(n, chainhash.Hash{})
		got, err := bb.Build(serializeBlock(t, msg), prev)
		if err != nil {
			t.Fatal(err)
		}
		viaWire, err := bb.BuildMsgBlock(msg, prev)
		if err != nil {
			t.Fatal(err)
		}
		if got.Hash != msg.BlockHash() || !bytes.Equal(got.Filter, viaWire.Filter) || len(got.Tweaks) != len(viaWire.Tweaks) {
			t.Fatalf("block of %d: in place and decoded differ", n)
		}
		var want []TxTweak
		var keys [][]byte
		rest := prev
		for i, tx := range msg.Transactions[1:] {
			tw, ok, _ := ComputeTweakMsg(tx, rest[:len(tx.TxIn)])
			rest = rest[len(tx.TxIn):]
			if ok {
				want = append(want, TxTweak{TxIndex: uint32(i + 1), Tweak: tw})
				for _, o := range tx.TxOut {
					if IsTaproot(o.PkScript) {
						keys = append(keys, o.PkScript[2:])
					}
				}
			}
		}
		for i := range want {
			if got.Tweaks[i] != want[i] || viaWire.Tweaks[i] != want[i] {
				t.Fatalf("block of %d, tweak %d: %+v / %+v, want %+v", n, i, got.Tweaks[i], viaWire.Tweaks[i], want[i])
			}
		}
		if !bytes.Equal(got.Filter, gcs.BuildBasic(got.Hash, keys)) {
			t.Fatalf("block of %d: filter is not the GCS of the tweaked transactions' taproot keys", n)
		}
	}
}

func TestBuildRejectsWhatIsNotABlockWithItsScripts(t *testing.T) {
	g := newTxGen(3)
	msg, prev := g.block(5, chainhash.Hash{})
	raw := serializeBlock(t, msg)
	cases := []struct {
		name string
		raw  []byte
		prev [][]byte
		want error
	}{
		{"truncated", raw[:len(raw)-1], prev, ErrMalformedBlock},
		{"trailing byte", append(bytes.Clone(raw), 0), prev, ErrMalformedBlock},
		{"header only", raw[:80], prev, ErrMalformedBlock},
		{"one spent script short", raw, prev[:len(prev)-1], ErrPrevScriptCount},
		{"one spent script too many", raw, append(append([][]byte{}, prev...), []byte{op1}), ErrPrevScriptCount},
	}
	var bb BlockBuilder
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := bb.Build(c.raw, c.prev); !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
		})
	}
	if _, err := bb.BuildMsgBlock(msg, prev[1:]); !errors.Is(err, ErrPrevScriptCount) {
		t.Fatalf("BuildMsgBlock with a script short: %v", err)
	}
}
