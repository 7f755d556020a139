package btcdtest

import (
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestCoinbaseHeightRoundTrip reads back the height MineBlockOn writes, at
// every encoding boundary of a script number (OP_N, 1..4-byte pushes, the
// sign bit).
func TestCoinbaseHeightRoundTrip(t *testing.T) {
	params := &chaincfg.RegressionNetParams
	for _, h := range []int32{1, 16, 17, 127, 128, 255, 256, 32767, 32768, 1<<23 - 1, 1 << 23, 1<<31 - 2} {
		blk := MineBlockOn(params, chainhash.Hash{1}, h-1, time.Unix(1_700_000_000, 0), nil, []byte{0x51})
		got, err := CoinbaseHeight(params, blk)
		if err != nil || got != h {
			t.Errorf("height %d: CoinbaseHeight = %d, %v", h, got, err)
		}
	}
	if got, err := CoinbaseHeight(params, params.GenesisBlock); err != nil || got != 0 {
		t.Errorf("genesis: CoinbaseHeight = %d, %v", got, err)
	}
}

// FuzzCoinbaseHeight feeds arbitrary coinbase scriptSigs: CoinbaseHeight
// must not panic and never reports a negative height.
func FuzzCoinbaseHeight(f *testing.F) {
	for _, seed := range [][]byte{{}, {0x00}, {0x51}, {0x60}, {0x01, 0x11}, {0x02, 0x80, 0x00}, {0x04}, {0x4c, 0x01, 0x05}} {
		f.Add(seed)
	}
	params := &chaincfg.RegressionNetParams
	f.Fuzz(func(t *testing.T, sigScript []byte) {
		tx := wire.NewMsgTx(1)
		tx.AddTxIn(&wire.TxIn{SignatureScript: sigScript})
		blk := &wire.MsgBlock{Transactions: []*wire.MsgTx{tx}}
		if h, err := CoinbaseHeight(params, blk); err == nil && h < 0 {
			t.Fatalf("CoinbaseHeight(%x) = %d", sigScript, h)
		}
	})
}
