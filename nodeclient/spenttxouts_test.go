package nodeclient

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/corefixture"
)

// encodeSpentTxOuts is the inverse of DecodeSpentTxOuts (Core's
// SerializeBlockUndo layout), for round trips.
func encodeSpentTxOuts(txs [][]wire.TxOut) []byte {
	var buf bytes.Buffer
	_ = wire.WriteVarInt(&buf, 0, uint64(len(txs)))
	for _, outs := range txs {
		_ = wire.WriteVarInt(&buf, 0, uint64(len(outs)))
		for _, o := range outs {
			_ = binary.Write(&buf, binary.LittleEndian, o.Value)
			_ = wire.WriteVarBytes(&buf, 0, o.PkScript)
		}
	}
	return buf.Bytes()
}

func TestDecodeSpentTxOutsFixtures(t *testing.T) {
	fx := corefixture.Load(t)
	checked := 0
	for _, b := range fx.Blocks {
		if b.RESTSpent == nil {
			continue
		}
		spent, err := DecodeSpentTxOuts(b.RESTSpent)
		if err != nil {
			t.Fatalf("%s: %v", b.Name(), err)
		}
		blk, _ := b.MsgBlock()
		prev, err := PrevScriptsFromSpent(blk, spent)
		if err != nil {
			t.Fatalf("%s: %v", b.Name(), err)
		}
		if !equalScripts(prev, expectedPrevScripts(t, b)) {
			t.Errorf("%s: scripts differ from spenttxouts.json", b.Name())
		}
		if !bytes.Equal(encodeSpentTxOuts(spent), b.RESTSpent) {
			t.Errorf("%s: re-encoding differs", b.Name())
		}
		checked++
	}
	genesis, err := os.ReadFile(filepath.Join(fx.Dir, "rest/other/genesis.spenttxouts.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if spent, err := DecodeSpentTxOuts(genesis); err != nil || len(spent) != 1 || len(spent[0]) != 0 {
		t.Fatalf("genesis: %v %v", spent, err)
	}
	if checked != 17 {
		t.Fatalf("checked %d blocks, want 17 (h101–h115 + 2 stale)", checked)
	}
}

func TestDecodeSpentTxOutsMalformed(t *testing.T) {
	for _, tt := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"count beyond data", []byte{0x05, 0x00}},
		{"huge count", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}},
		{"non-canonical count", []byte{0xfd, 0x01, 0x00, 0x00}},
		{"truncated compactsize", []byte{0xfd, 0x01}},
		{"inputs beyond data", []byte{0x02, 0x00, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"truncated value", []byte{0x02, 0x00, 0x01, 1, 2, 3, 4, 5, 6, 7, 8}},
		{"script beyond data", []byte{0x02, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0x05, 0x51}},
		{"trailing bytes", []byte{0x01, 0x00, 0x00}},
	} {
		if _, err := DecodeSpentTxOuts(tt.data); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", tt.name, err)
		}
	}
}

func TestPrevScriptsShapeMismatch(t *testing.T) {
	fx := corefixture.Load(t)
	b := fx.Blocks[len(fx.Blocks)-1]
	blk, _ := b.MsgBlock()
	spent, _ := DecodeSpentTxOuts(b.RESTSpent)
	if _, err := PrevScriptsFromSpent(blk, spent[:len(spent)-1]); !errors.Is(err, ErrMalformed) {
		t.Errorf("missing tx: %v", err)
	}
	spent[1] = spent[1][:0]
	if _, err := PrevScriptsFromSpent(blk, spent); !errors.Is(err, ErrMalformed) {
		t.Errorf("missing input: %v", err)
	}
}

func FuzzDecodeSpentTxOuts(f *testing.F) {
	fx := corefixture.Load(f)
	for _, b := range fx.Blocks {
		if b.RESTSpent != nil {
			f.Add(b.RESTSpent)
		}
	}
	f.Add([]byte{0x01, 0x00})
	f.Add([]byte{0xfd, 0xfd, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		spent, err := DecodeSpentTxOuts(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error without ErrMalformed: %v", err)
			}
			return
		}
		// Decode → encode gives back the input (the format is canonical),
		// and decoding again gives equal values.
		enc := encodeSpentTxOuts(spent)
		if !bytes.Equal(enc, data) {
			t.Fatalf("round trip differs")
		}
		again, err := DecodeSpentTxOuts(enc)
		if err != nil || len(again) != len(spent) {
			t.Fatalf("re-decode: %v", err)
		}
	})
}
