package btcdtest

import (
	"fmt"

	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// SignTx signs every input of tx, whose spent outputs are prevOuts (same
// order as tx.TxIn), with the wallet's keys: ECDSA SIGHASH_ALL for legacy
// and segwit v0 inputs, Schnorr SIGHASH_DEFAULT key-path spends (BIP-86
// tweak) for taproot inputs. tx's outputs must be final. Every prevout must
// pay to a script the wallet owns.
func (w *Wallet) SignTx(tx *wire.MsgTx, prevOuts []*wire.TxOut) error {
	if len(prevOuts) != len(tx.TxIn) {
		return fmt.Errorf("sign tx: %d prevouts for %d inputs", len(prevOuts), len(tx.TxIn))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.signTxLocked(tx, prevOuts)
}

// signTxLocked is SignTx with w.mu held.
func (w *Wallet) signTxLocked(tx *wire.MsgTx, prevOuts []*wire.TxOut) error {
	if len(prevOuts) != len(tx.TxIn) {
		return fmt.Errorf("sign tx: %d prevouts for %d inputs", len(prevOuts), len(tx.TxIn))
	}
	fetcher := txscript.NewMultiPrevOutFetcher(make(map[wire.OutPoint]*wire.TxOut, len(prevOuts)))
	for i, in := range tx.TxIn {
		fetcher.AddPrevOut(in.PreviousOutPoint, prevOuts[i])
	}
	// Built once per transaction: the BIP-143/341 midstates are shared by
	// all inputs.
	sigHashes := txscript.NewTxSigHashes(tx, fetcher)
	for i, prev := range prevOuts {
		if err := w.signInputLocked(tx, i, prev, sigHashes, fetcher); err != nil {
			return fmt.Errorf("sign tx input %d: %w", i, err)
		}
	}
	return nil
}

// signInputLocked fills in the scriptSig and/or witness of input idx.
func (w *Wallet) signInputLocked(tx *wire.MsgTx, idx int, prev *wire.TxOut,
	sigHashes *txscript.TxSigHashes, fetcher txscript.PrevOutputFetcher) error {

	o, ok := w.owned[string(prev.PkScript)]
	if !ok {
		return fmt.Errorf("prevout script %x is not owned by the wallet", prev.PkScript)
	}
	k := w.keys[o.key]
	in := tx.TxIn[idx]
	const all = txscript.SigHashAll
	switch o.kind {
	case KindP2PKH, KindP2PK, KindBareMultisig, KindP2SHMultisig:
		sub := prev.PkScript
		if o.kind == KindP2SHMultisig {
			sub = o.redeem
		}
		sig, err := txscript.RawTxInSignature(tx, idx, sub, all, k.priv)
		if err != nil {
			return err
		}
		b := txscript.NewScriptBuilder()
		switch o.kind {
		case KindP2PKH:
			b.AddData(sig).AddData(k.compressed)
		case KindP2PK:
			b.AddData(sig)
		case KindBareMultisig:
			b.AddOp(txscript.OP_0).AddData(sig) // OP_0: CHECKMULTISIG's extra pop
		case KindP2SHMultisig:
			b.AddOp(txscript.OP_0).AddData(sig).AddData(o.redeem)
		}
		if in.SignatureScript, err = b.Script(); err != nil {
			return err
		}
		in.Witness = nil
	case KindP2WPKH, KindP2SHP2WPKH:
		// The P2WPKH program doubles as the BIP-143 script code template.
		program := prev.PkScript
		if o.kind == KindP2SHP2WPKH {
			program = o.redeem
		}
		wit, err := txscript.WitnessSignature(tx, sigHashes, idx, prev.Value, program, all, k.priv, true)
		if err != nil {
			return err
		}
		in.Witness = wit
		in.SignatureScript = nil
		if o.kind == KindP2SHP2WPKH {
			if in.SignatureScript, err = txscript.NewScriptBuilder().AddData(o.redeem).Script(); err != nil {
				return err
			}
		}
	case KindP2WSH:
		sig, err := txscript.RawTxInWitnessSignature(tx, sigHashes, idx, prev.Value, o.redeem, all, k.priv)
		if err != nil {
			return err
		}
		in.Witness = wire.TxWitness{sig, o.redeem}
		in.SignatureScript = nil
	case KindP2TR:
		_, tweaked := k.taproot()
		hash, err := txscript.CalcTaprootSignatureHash(sigHashes, txscript.SigHashDefault, tx, idx, fetcher)
		if err != nil {
			return err
		}
		// btcd verifies every signature anyway; skip the signer's own check.
		sig, err := schnorr.Sign(tweaked, hash, schnorr.FastSign())
		if err != nil {
			return err
		}
		in.Witness = wire.TxWitness{sig.Serialize()} // 64 bytes: SIGHASH_DEFAULT
		in.SignatureScript = nil
	default:
		return fmt.Errorf("cannot sign for kind %v", o.kind)
	}
	return nil
}
