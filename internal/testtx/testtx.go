// Package testtx builds the small transactions the P2P tests send and
// read: one without a witness and one with, each distinct per seed. It is
// test support: production code must not import it.
package testtx

import (
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Legacy returns a transaction without witness, distinct per seed.
func Legacy(seed byte) *wire.MsgTx {
	tx := wire.NewMsgTx(1)
	tx.AddTxIn(&wire.TxIn{
		PreviousOutPoint: wire.OutPoint{Hash: chainhash.Hash{seed, 9}, Index: 0},
		SignatureScript:  []byte{0x51, seed},
		Sequence:         0xfffffffe,
	})
	tx.AddTxOut(&wire.TxOut{Value: 5000, PkScript: []byte{0x51}})
	tx.AddTxOut(&wire.TxOut{Value: 6000, PkScript: nil})
	return tx
}

// Witness returns a transaction with a witness, distinct per seed.
func Witness(seed byte) *wire.MsgTx {
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(&wire.TxIn{
		PreviousOutPoint: wire.OutPoint{Hash: chainhash.Hash{seed}, Index: 1},
		Witness:          wire.TxWitness{{seed, 1, 2, 3}, {4, 5}},
		Sequence:         0xffffffff,
	})
	tx.AddTxOut(&wire.TxOut{Value: 1000, PkScript: []byte{0x00, 0x14, seed, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}})
	return tx
}
