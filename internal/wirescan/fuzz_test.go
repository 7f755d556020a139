package wirescan

import (
	"bytes"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"
)

// FuzzTx checks the transaction reader against wire's decoder on arbitrary
// bytes: NewReader accepts exactly the single transactions wire decodes
// using every byte, with the same txid, wtxid, output scripts and
// outpoints, and the count reader accepts all of them and reads them the
// same way.
func FuzzTx(f *testing.F) {
	for i, raw := range realBlocks(f) {
		if i%16 != 0 {
			continue
		}
		var blk wire.MsgBlock
		if err := blk.Deserialize(bytes.NewReader(raw)); err != nil {
			f.Fatal(err)
		}
		for _, tx := range blk.Transactions {
			f.Add(serialize(f, tx))
		}
	}
	f.Add(serialize(f, witnessTx()))
	f.Add([]byte{1, 0, 0, 0, 0, 0xfe, 0x40, 0x75, 0x38, 0x00})
	f.Fuzz(func(t *testing.T, raw []byte) {
		if diff := txAgreesWithWire(raw); diff != "" {
			t.Fatal(diff)
		}
	})
}

// FuzzBlock does the same for blocks (Block, then Tx per transaction).
func FuzzBlock(f *testing.F) {
	for i, raw := range realBlocks(f) {
		if i%8 == 0 || len(raw) > 1000 && len(raw) < 20000 {
			f.Add(raw)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if diff := blockAgreesWithWire(raw); diff != "" {
			t.Fatal(diff)
		}
	})
}
