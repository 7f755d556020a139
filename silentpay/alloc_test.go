package silentpay

import (
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// TestParseTweakDataAllocatesForWhatArrived: a declared count the bytes
// cannot hold costs no allocation, and a full answer one.
func TestParseTweakDataAllocatesForWhatArrived(t *testing.T) {
	if raceEnabled {
		t.Skip("race instrumentation allocates")
	}
	huge := []byte{0xfe, 0xff, 0xff, 0xff, 0x0f, 1} // 268M records declared, 1 byte sent
	if a := testing.AllocsPerRun(100, func() { _, _ = ParseTweakData(huge) }); a > 8 {
		t.Fatalf("%v allocations for a lying count, want at most 8 (the error)", a)
	}
	tw := make([]TxTweak, 500)
	for i := range tw {
		tw[i] = TxTweak{TxIndex: uint32(i + 1), Tweak: Tweak{Point: [33]byte{2}}}
	}
	data := AppendTweakData(nil, tw)
	if a := testing.AllocsPerRun(100, func() { _, _ = ParseTweakData(data) }); a != 1 {
		t.Fatalf("%v allocations for 500 records, want 1", a)
	}
}

// TestBuildAllocatesPerBlockNotPerInput: once its buffers have grown, a
// BlockBuilder's allocations for a block are a handful (the tweak slice,
// the filter, P2PKH hashing), not one per input or witness item.
func TestBuildAllocatesPerBlockNotPerInput(t *testing.T) {
	if raceEnabled {
		t.Skip("race instrumentation allocates")
	}
	g := newTxGen(9)
	msg, prev := g.block(200, chainhash.Hash{})
	raw := serializeBlock(t, msg)
	p2pkh := 0
	for _, s := range prev {
		if isP2PKH(s) {
			p2pkh++
		}
	}
	var bb BlockBuilder
	if _, err := bb.Build(raw, prev); err != nil {
		t.Fatal(err)
	}
	a := testing.AllocsPerRun(20, func() { _, _ = bb.Build(raw, prev) })
	// address.Hash160 allocates its two hashers and two sums per P2PKH
	// key it hashes; nothing else may grow with the block.
	if limit := float64(4*p2pkh + 16); a > limit {
		t.Fatalf("%v allocations for a block of %d inputs (%d P2PKH), want at most %v", a, len(prev), p2pkh, limit)
	}
}
