package msgread

import (
	"bytes"
	"encoding/binary"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/wireframe"
)

// rawHeader builds a frame header with a claimed payload length.
func rawHeader(net wire.BitcoinNet, cmd string, length uint32) []byte {
	b := make([]byte, wireframe.HeaderSize)
	binary.LittleEndian.PutUint32(b[0:4], uint32(net))
	copy(b[4:16], cmd)
	binary.LittleEndian.PutUint32(b[16:20], length)
	return b
}

// payloadOf serialises msg.
func payloadOf(msg wire.Message) []byte {
	var b bytes.Buffer
	_ = msg.BtcEncode(&b, wire.ProtocolVersion, wire.WitnessEncoding)
	return b.Bytes()
}

// legacyTx returns a transaction without witness, distinct per seed.
func legacyTx(seed byte) *wire.MsgTx {
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

// witnessTx returns a transaction with a witness, distinct per seed.
func witnessTx(seed byte) *wire.MsgTx {
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(&wire.TxIn{
		PreviousOutPoint: wire.OutPoint{Hash: chainhash.Hash{seed}, Index: 1},
		Witness:          wire.TxWitness{{seed, 1, 2, 3}, {4, 5}},
		Sequence:         0xffffffff,
	})
	tx.AddTxOut(&wire.TxOut{Value: 1000, PkScript: []byte{0x00, 0x14, seed, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}})
	return tx
}

// encodeFrame serialises msg as a complete frame.
func encodeFrame(msg wire.Message, net wire.BitcoinNet, enc wire.MessageEncoding) []byte {
	var buf bytes.Buffer
	_, _ = wire.WriteMessageWithEncodingN(&buf, msg, wire.ProtocolVersion, net, enc)
	return buf.Bytes()
}
