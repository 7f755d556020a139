package p2pclient

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

func sampleTx(witness bool) []byte {
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: chainhash.Hash{1}, Index: 2}, []byte{1, 2, 3}, nil))
	if witness {
		tx.TxIn[0].Witness = wire.TxWitness{{4, 5}, {}}
	}
	tx.AddTxOut(wire.NewTxOut(7, []byte{0x51}))
	var buf bytes.Buffer
	_ = tx.Serialize(&buf)
	return buf.Bytes()
}

// Counts that cannot fit in what is left are refused before wire would
// allocate for them; real transactions and blocks pass.
func TestBoundsRefuseLyingCounts(t *testing.T) {
	for _, witness := range []bool{false, true} {
		if err := checkTx(sampleTx(witness)); err != nil {
			t.Fatalf("valid tx (witness %v): %v", witness, err)
		}
	}
	lyingInputs := binary.LittleEndian.AppendUint32(nil, 1)
	lyingInputs = append(lyingInputs, 0xfe, 0x00, 0x00, 0x0c, 0x00) // 786,432 inputs
	lyingInputs = append(lyingInputs, make([]byte, 60)...)
	blk := wire.MsgBlock{Transactions: []*wire.MsgTx{wire.NewMsgTx(1)}}
	blk.Transactions[0].AddTxIn(wire.NewTxIn(&wire.OutPoint{}, nil, nil))
	var good bytes.Buffer
	_ = blk.Serialize(&good)
	lyingBlock := append(bytes.Clone(good.Bytes()[:80]), 0xfe, 0xff, 0xff, 0x00, 0x00)
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"tx with 786,432 inputs in 69 bytes", checkTx(lyingInputs)},
		{"truncated tx", checkTx(sampleTx(true)[:20])},
		{"block with 65,535 txs in 85 bytes", checkBlock(lyingBlock)},
		{"headers: 2,000 declared, none sent", checkList([]byte{0xfd, 0xd0, 0x07}, 0, 81)},
		{"cfcheckpt: count past the end", checkList(append(make([]byte, 33), 0x05), 33, 32)},
	} {
		if !errors.Is(tc.err, ErrProtocol) {
			t.Errorf("%s: %v, want ErrProtocol", tc.name, tc.err)
		}
	}
	if err := checkBlock(good.Bytes()); err != nil {
		t.Errorf("valid block: %v", err)
	}
}

// FuzzCheckTx: the count walk never panics and accepts every transaction
// wire decodes completely.
func FuzzCheckTx(f *testing.F) {
	f.Add(sampleTx(false))
	f.Add(sampleTx(true))
	f.Fuzz(func(t *testing.T, raw []byte) {
		err := checkTx(raw)
		var tx wire.MsgTx
		r := bytes.NewReader(raw)
		if tx.Deserialize(r) == nil && r.Len() == 0 && err != nil {
			t.Fatalf("wire decodes it, the walk refuses: %v", err)
		}
	})
}
