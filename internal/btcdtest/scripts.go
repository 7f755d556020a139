package btcdtest

import (
	"crypto/sha256"
	"fmt"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/txscript/v2"
)

// Kind is the template of an output script the wallet can create.
type Kind int

// Script kinds. Every kind but KindNullData is owned and spendable by the
// wallet.
const (
	KindP2PKH        Kind = iota // pay to pubkey hash
	KindP2WPKH                   // segwit v0 pubkey hash
	KindP2TR                     // segwit v1, BIP-86 key-path only
	KindP2SHP2WPKH               // P2SH-wrapped P2WPKH
	KindP2SHMultisig             // P2SH-wrapped 1-of-1 bare multisig
	KindP2WSH                    // segwit v0 script hash of <pk> OP_CHECKSIG
	KindP2PK                     // pay to (compressed) pubkey
	KindBareMultisig             // 1-of-2 bare multisig
	KindNullData                 // OP_RETURN <data>; unspendable, not owned
	numKinds
)

var kindNames = [numKinds]string{
	"p2pkh", "p2wpkh", "p2tr", "p2sh-p2wpkh", "p2sh-multisig", "p2wsh", "p2pk", "bare-multisig", "nulldata",
}

// String names the kind.
func (k Kind) String() string {
	if k < 0 || k >= numKinds {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return kindNames[k]
}

// ScriptClass is the txscript class of scripts of this kind (P2SH kinds are
// txscript.ScriptHashTy).
func (k Kind) ScriptClass() txscript.ScriptClass {
	switch k {
	case KindP2PKH:
		return txscript.PubKeyHashTy
	case KindP2WPKH:
		return txscript.WitnessV0PubKeyHashTy
	case KindP2TR:
		return txscript.WitnessV1TaprootTy
	case KindP2SHP2WPKH, KindP2SHMultisig:
		return txscript.ScriptHashTy
	case KindP2WSH:
		return txscript.WitnessV0ScriptHashTy
	case KindP2PK:
		return txscript.PubKeyTy
	case KindBareMultisig:
		return txscript.MultiSigTy
	case KindNullData:
		return txscript.NullDataTy
	}
	return txscript.NonStandardTy
}

// ownedScript says how to spend an output script the wallet made.
type ownedScript struct {
	kind   Kind
	key    uint32 // signing key index
	redeem []byte // P2SH redeem script or P2WSH witness script
}

// registerLocked builds the output script of kind for key idx (and, for
// bare multisig, a second fresh key) and records it as owned.
func (w *Wallet) registerLocked(kind Kind, idx uint32) ([]byte, error) {
	k := w.keys[idx]
	var script, redeem []byte
	var err error
	switch kind {
	case KindP2PKH:
		script, err = txscript.NewScriptBuilder().AddOp(txscript.OP_DUP).AddOp(txscript.OP_HASH160).
			AddData(k.hash160).AddOp(txscript.OP_EQUALVERIFY).AddOp(txscript.OP_CHECKSIG).Script()
	case KindP2WPKH:
		script, err = witnessProgram(0, k.hash160)
	case KindP2TR:
		out, _ := k.taproot()
		script, err = witnessProgram(1, out)
	case KindP2SHP2WPKH:
		if redeem, err = witnessProgram(0, k.hash160); err == nil {
			script, err = p2sh(redeem)
		}
	case KindP2SHMultisig:
		redeem, err = txscript.NewScriptBuilder().AddOp(txscript.OP_1).AddData(k.compressed).
			AddOp(txscript.OP_1).AddOp(txscript.OP_CHECKMULTISIG).Script()
		if err == nil {
			script, err = p2sh(redeem)
		}
	case KindP2WSH:
		redeem, err = txscript.NewScriptBuilder().AddData(k.compressed).AddOp(txscript.OP_CHECKSIG).Script()
		if err == nil {
			sum := sha256.Sum256(redeem)
			script, err = witnessProgram(0, sum[:])
		}
	case KindP2PK:
		script, err = txscript.NewScriptBuilder().AddData(k.compressed).AddOp(txscript.OP_CHECKSIG).Script()
	case KindBareMultisig:
		// The second key is the next one; signing uses only the first.
		for uint32(len(w.keys)) <= idx+1 {
			w.newKeyLocked()
		}
		other := w.keys[idx+1]
		script, err = txscript.NewScriptBuilder().AddOp(txscript.OP_1).AddData(k.compressed).
			AddData(other.compressed).AddOp(txscript.OP_2).AddOp(txscript.OP_CHECKMULTISIG).Script()
	default:
		return nil, fmt.Errorf("register script: kind %v is not ownable", kind)
	}
	if err != nil {
		return nil, fmt.Errorf("build %v script: %w", kind, err)
	}
	w.owned[string(script)] = ownedScript{kind: kind, key: idx, redeem: redeem}
	k.used |= 1 << kind
	return script, nil
}

// NewScript returns a new output script of kind that the wallet owns and
// can spend; every call gives a script never returned before. KindNullData
// is rejected (use NullDataScript).
func (w *Wallet) NewScript(kind Kind) ([]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.newScriptLocked(kind)
}

// newScriptLocked registers a script of kind on the first key not yet used
// for that kind. Keys are shared across kinds (a P2PKH and a P2TR script
// of one key are different scripts), which keeps key derivation, a scalar
// multiplication each, off the hot path of BuildTxRichChain.
func (w *Wallet) newScriptLocked(kind Kind) ([]byte, error) {
	if kind < 0 || kind >= numKinds || kind == KindNullData {
		return nil, fmt.Errorf("new script: kind %v is not ownable", kind)
	}
	idx := w.nextKey[kind]
	for idx >= uint32(len(w.keys)) || w.keys[idx].usedBy(kind) {
		if idx >= uint32(len(w.keys)) {
			w.newKeyLocked()
			continue
		}
		idx++
	}
	w.nextKey[kind] = idx + 1
	return w.registerLocked(kind, idx)
}

// NullDataScript returns OP_RETURN <data>.
func NullDataScript(data []byte) ([]byte, error) {
	return txscript.NullDataScript(data)
}

// KindOf reports the kind of an output script the wallet owns.
func (w *Wallet) KindOf(script []byte) (Kind, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	o, ok := w.owned[string(script)]
	return o.kind, ok
}

func witnessProgram(version byte, program []byte) ([]byte, error) {
	op := byte(txscript.OP_0)
	if version > 0 {
		op = txscript.OP_1 - 1 + version
	}
	return txscript.NewScriptBuilder().AddOp(op).AddData(program).Script()
}

func p2sh(redeem []byte) ([]byte, error) {
	return txscript.NewScriptBuilder().AddOp(txscript.OP_HASH160).AddData(address.Hash160(redeem)).
		AddOp(txscript.OP_EQUAL).Script()
}
