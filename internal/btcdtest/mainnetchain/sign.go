package mainnetchain

import (
	"fmt"

	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// plannedTx is a transaction of the mainnet-shaped chain whose inputs and
// outputs are chosen but not yet signed.
type plannedTx struct {
	tx *wire.MsgTx
	// ins are the outputs spent, in input order; parents[i] is the index
	// in the block of the transaction that created ins[i] when that is in
	// the same block (its txid is known only once it is signed), else -1.
	ins     []genOut
	parents []int32
	// wave orders signing: a transaction spending an output of the same
	// block is signed after its parent.
	wave int
}

// prevOutFetcher serves the outputs a planned transaction spends, for
// the BIP-143/341 signature hashes.
type prevOutFetcher struct {
	outs map[wire.OutPoint]*wire.TxOut
}

// FetchPrevOutput implements txscript.PrevOutputFetcher.
func (f prevOutFetcher) FetchPrevOutput(op wire.OutPoint) *wire.TxOut { return f.outs[op] }

// signPlanned fills in the scriptSig and witness of every input of p. The
// outpoints of same-block parents must be filled in already.
func signPlanned(keys *keySeq, p *plannedTx) error {
	tx := p.tx
	prev := make([]*wire.TxOut, len(p.ins))
	fetch := prevOutFetcher{outs: make(map[wire.OutPoint]*wire.TxOut, len(p.ins))}
	for i := range p.ins {
		in := &p.ins[i]
		prev[i] = wire.NewTxOut(in.value, mixScript(keys, in.kind, in.key))
		fetch.outs[tx.TxIn[i].PreviousOutPoint] = prev[i]
	}
	sigHashes := txscript.NewTxSigHashes(tx, fetch)
	for i := range p.ins {
		if err := signInput(keys, tx, i, &p.ins[i], prev[i], sigHashes, fetch); err != nil {
			return fmt.Errorf("sign input %d (%v): %w", i, p.ins[i].kind, err)
		}
	}
	return nil
}

// signInput signs input idx of tx, which spends out (prev).
func signInput(keys *keySeq, tx *wire.MsgTx, idx int, out *genOut, prev *wire.TxOut,
	sigHashes *txscript.TxSigHashes, fetch txscript.PrevOutputFetcher) error {

	in := tx.TxIn[idx]
	const all = txscript.SigHashAll
	switch out.kind {
	case mixP2WPKH, mixP2SHP2WPKH:
		program := prev.PkScript
		if out.kind == mixP2SHP2WPKH {
			program = mixScript(keys, mixP2WPKH, out.key)
		}
		sig, err := txscript.RawTxInWitnessSignature(tx, sigHashes, idx, out.value, program, all, keys.priv(out.key))
		if err != nil {
			return err
		}
		in.Witness = wire.TxWitness{sig, keys.pub(out.key)}
		if out.kind == mixP2SHP2WPKH {
			in.SignatureScript = append([]byte{byte(len(program))}, program...)
		}
	case mixP2TR:
		hash, err := txscript.CalcTaprootSignatureHash(sigHashes, txscript.SigHashDefault, tx, idx, fetch)
		if err != nil {
			return err
		}
		pub := keys.pub(out.key)
		d := keys.priv(out.key).Key
		sig := schnorrSignBIP340(d, pub[0] == 0x03, pub[1:], hash)
		in.Witness = wire.TxWitness{sig[:]}
	case mixP2WSHMulti:
		script := multisigScript(keys, out.key)
		wit := wire.TxWitness{nil}
		for k := range uint32(2) {
			sig, err := txscript.RawTxInWitnessSignature(tx, sigHashes, idx, out.value, script, all, keys.priv(out.key+k))
			if err != nil {
				return err
			}
			wit = append(wit, sig)
		}
		in.Witness = append(wit, script)
	case mixP2PKH, mixP2PK:
		sig, err := txscript.RawTxInSignature(tx, idx, prev.PkScript, all, keys.priv(out.key))
		if err != nil {
			return err
		}
		b := txscript.NewScriptBuilder().AddData(sig)
		if out.kind == mixP2PKH {
			b.AddData(keys.pub(out.key))
		}
		if in.SignatureScript, err = b.Script(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("cannot spend kind %v", out.kind)
	}
	return nil
}
