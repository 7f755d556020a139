package wirescan

import (
	"bytes"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/corefixture"
	"github.com/cfindexd/cfindexd/internal/testvectors"
)

// realBlocks returns serialized blocks from real software: the Bitcoin
// Core v31 regtest recording and the BIP-158 testnet vector blocks,
// legacy and segwit transactions mixed.
func realBlocks(tb testing.TB) [][]byte {
	tb.Helper()
	fx := corefixture.Load(tb)
	var out [][]byte
	for _, b := range fx.AllBlocks() {
		out = append(out, b.Raw)
	}
	for _, v := range testvectors.LoadBIP158(tb) {
		out = append(out, v.Raw)
	}
	return out
}

// serialize returns tx in witness encoding.
func serialize(tb testing.TB, tx *wire.MsgTx) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := tx.Serialize(&b); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// legacyTx is a transaction without witness; witnessTx one with.
func legacyTx() *wire.MsgTx {
	tx := wire.NewMsgTx(1)
	tx.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: chainhash.Hash{9}, Index: 3}, []byte{0x51, 7}, nil))
	tx.AddTxOut(wire.NewTxOut(5000, []byte{0x51}))
	tx.AddTxOut(wire.NewTxOut(6000, nil))
	return tx
}

func witnessTx() *wire.MsgTx {
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: chainhash.Hash{1}, Index: 1}, nil, wire.TxWitness{{1, 2, 3}, {}}))
	tx.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: chainhash.Hash{2}, Index: 0}, nil, nil))
	tx.AddTxOut(wire.NewTxOut(1000, []byte{0x00, 0x14, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}))
	return tx
}

// txAgreesWithWire reads raw as one transaction with a NewReader and
// compares acceptance, ids, output scripts and outpoints with wire's
// decoder; a count reader must accept whatever NewReader accepts and read
// it the same way. It returns what differs, or "".
func txAgreesWithWire(raw []byte) string {
	r := NewReader(raw)
	var outs [][]byte
	var spends []wire.OutPoint
	t, err := r.Tx(&outs, &spends)
	if err == nil {
		err = r.End()
	}
	var tx wire.MsgTx
	wr := bytes.NewReader(raw)
	werr := tx.Deserialize(wr)
	wireOK := werr == nil && wr.Len() == 0
	lr := NewCountReader(raw)
	lt, lerr := lr.Tx(nil, nil)
	if diff, over := sameAcceptance(err, werr, wireOK); over {
		return diff
	}
	switch {
	case lerr != nil || lt != t:
		return "count reader reads it differently: " + errString(lerr)
	case t.Start != 0 || t.End != len(raw) || t.Witness != tx.HasWitness():
		return "positions or witness flag differ"
	case r.TxID(t) != tx.TxHash() || r.WTxID(t) != tx.WitnessHash():
		return "txid or wtxid differs"
	}
	return sameOutsAndSpends(outs, spends, []*wire.MsgTx{&tx})
}

// sameOutsAndSpends compares the output scripts and outpoints a Reader
// collected with those of txs. It returns what differs, or "".
func sameOutsAndSpends(outs [][]byte, spends []wire.OutPoint, txs []*wire.MsgTx) string {
	var wouts [][]byte
	var wspends []wire.OutPoint
	for _, tx := range txs {
		for _, o := range tx.TxOut {
			wouts = append(wouts, o.PkScript)
		}
		for _, in := range tx.TxIn {
			wspends = append(wspends, in.PreviousOutPoint)
		}
	}
	if len(outs) != len(wouts) || len(spends) != len(wspends) {
		return "output or input count differs"
	}
	for i := range wouts {
		if !bytes.Equal(outs[i], wouts[i]) {
			return "output script differs"
		}
	}
	for i := range wspends {
		if spends[i] != wspends[i] {
			return "outpoint differs"
		}
	}
	return ""
}

// blockAgreesWithWire reads raw as one block (Block, then Tx for each
// transaction, then End) and compares it with wire's decoder, as
// txAgreesWithWire does for transactions. It returns what differs, or "".
func blockAgreesWithWire(raw []byte) string {
	r := NewReader(raw)
	header, ntx, err := r.Block()
	var ids []chainhash.Hash
	var outs [][]byte
	var spends []wire.OutPoint
	for i := 0; err == nil && i < ntx; i++ {
		var t Tx
		if t, err = r.Tx(&outs, &spends); err == nil {
			ids = append(ids, r.TxID(t))
		}
	}
	if err == nil {
		err = r.End()
	}
	lr := NewCountReader(raw)
	_, lntx, lerr := lr.Block()
	for i := 0; lerr == nil && i < lntx; i++ {
		_, lerr = lr.Tx(nil, nil)
	}
	var blk wire.MsgBlock
	wr := bytes.NewReader(raw)
	werr := blk.Deserialize(wr)
	wireOK := werr == nil && wr.Len() == 0
	if diff, over := sameAcceptance(err, werr, wireOK); over {
		return diff
	}
	switch {
	case lerr != nil || lr.Offset() != len(raw):
		return "count reader reads it differently: " + errString(lerr)
	case !bytes.Equal(header, raw[:BlockHeaderSize]) || len(ids) != len(blk.Transactions):
		return "header or transaction count differs"
	}
	for i, tx := range blk.Transactions {
		if ids[i] != tx.TxHash() {
			return "txid differs"
		}
	}
	return sameOutsAndSpends(outs, spends, blk.Transactions)
}

// sameAcceptance compares NewReader's verdict (err) with wire's (wireOK,
// from werr and the bytes left). over reports that the comparison ends
// here: they disagree (diff says how) or both refused.
func sameAcceptance(err, werr error, wireOK bool) (diff string, over bool) {
	switch {
	case (err == nil) != wireOK:
		return "reader error " + errString(err) + ", wire error " + errString(werr), true
	case err != nil:
		return "", true
	}
	return "", false
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
