package indexer

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// spInKind is how an output the test's sender holds is spent.
type spInKind int

const (
	inP2WPKH            spInKind = iota // eligible
	inP2SHP2WPKH                        // eligible
	inP2PKH                             // eligible: compressed key
	inP2TR                              // eligible: BIP-86 key path
	inP2PKHUncompressed                 // not eligible
	inP2TRNUMSScript                    // not eligible: script path, NUMS internal key
)

// numsH is BIP-341's NUMS point H (x-only), the internal key of a taproot
// output that can only be spent by a script.
const numsH = "50929b74c1a04954b78b4b6035e97a5e078a5a0f28ec96d547bfee9ace803ac0"

// spCoin is an output the sender holds, with what spending it needs.
type spCoin struct {
	kind   spInKind
	key    *btcec.PrivateKey
	op     wire.OutPoint
	out    *wire.TxOut
	redeem []byte // P2SH-P2WPKH: the P2WPKH program; NUMS: the leaf script
}

// eligibleKey is the private key BIP-352 sums for the coin (the BIP-86
// tweaked key for a taproot key path), false for an ineligible coin.
func (c *spCoin) eligibleKey() (*btcec.PrivateKey, bool) {
	switch c.kind {
	case inP2WPKH, inP2SHP2WPKH, inP2PKH:
		return c.key, true
	case inP2TR:
		return txscript.TweakTaprootPrivKey(*c.key, nil), true
	}
	return nil, false
}

// spKey derives key i of the test's sender from a fixed seed.
func spKey(i uint32) *btcec.PrivateKey {
	var buf [4]byte
	binary.BigEndian.PutUint32(buf[:], i)
	sum := sha256.Sum256(append([]byte("cfindexd/indexer/sp-test/v1"), buf[:]...))
	k, _ := btcec.PrivKeyFromBytes(sum[:])
	return k
}

// spScript returns the output script of kind for key, and the P2SH
// redeem script or tapscript leaf when there is one.
func spScript(kind spInKind, key *btcec.PrivateKey) ([]byte, []byte, error) {
	pub := key.PubKey()
	switch kind {
	case inP2WPKH:
		return p2wpkhScript(pub), nil, nil
	case inP2SHP2WPKH:
		redeem := p2wpkhScript(pub)
		s, err := txscript.NewScriptBuilder().AddOp(txscript.OP_HASH160).AddData(address.Hash160(redeem)).AddOp(txscript.OP_EQUAL).Script()
		return s, redeem, err
	case inP2PKH, inP2PKHUncompressed:
		ser := pub.SerializeCompressed()
		if kind == inP2PKHUncompressed {
			ser = pub.SerializeUncompressed()
		}
		s, err := txscript.NewScriptBuilder().AddOp(txscript.OP_DUP).AddOp(txscript.OP_HASH160).AddData(address.Hash160(ser)).
			AddOp(txscript.OP_EQUALVERIFY).AddOp(txscript.OP_CHECKSIG).Script()
		return s, nil, err
	case inP2TR:
		return taprootScript(txscript.ComputeTaprootKeyNoScript(pub)), nil, nil
	case inP2TRNUMSScript:
		leaf, err := txscript.NewScriptBuilder().AddData(schnorr.SerializePubKey(pub)).AddOp(txscript.OP_CHECKSIG).Script()
		if err != nil {
			return nil, nil, err
		}
		h, err := numsKey()
		if err != nil {
			return nil, nil, err
		}
		root := txscript.AssembleTaprootScriptTree(txscript.NewBaseTapLeaf(leaf)).RootNode.TapHash()
		return taprootScript(txscript.ComputeTaprootOutputKey(h, root[:])), leaf, nil
	}
	return nil, nil, fmt.Errorf("kind %d", kind)
}

func numsKey() (*btcec.PublicKey, error) {
	b, _ := hex.DecodeString(numsH)
	return schnorr.ParsePubKey(b)
}

func p2wpkhScript(pub *btcec.PublicKey) []byte {
	return append([]byte{txscript.OP_0, 20}, address.Hash160(pub.SerializeCompressed())...)
}

func taprootScript(outputKey *btcec.PublicKey) []byte {
	return append([]byte{txscript.OP_1, 32}, schnorr.SerializePubKey(outputKey)...)
}

// signSP signs every input of tx, which spends coins in order.
func signSP(tx *wire.MsgTx, coins []*spCoin) error {
	fetcher := txscript.NewMultiPrevOutFetcher(nil)
	for _, c := range coins {
		fetcher.AddPrevOut(c.op, c.out)
	}
	hashes := txscript.NewTxSigHashes(tx, fetcher)
	for i, c := range coins {
		in := tx.TxIn[i]
		var err error
		switch c.kind {
		case inP2WPKH:
			in.Witness, err = txscript.WitnessSignature(tx, hashes, i, c.out.Value, c.out.PkScript, txscript.SigHashAll, c.key, true)
		case inP2SHP2WPKH:
			if in.Witness, err = txscript.WitnessSignature(tx, hashes, i, c.out.Value, c.redeem, txscript.SigHashAll, c.key, true); err == nil {
				in.SignatureScript, err = txscript.NewScriptBuilder().AddData(c.redeem).Script()
			}
		case inP2PKH, inP2PKHUncompressed:
			in.SignatureScript, err = txscript.SignatureScript(tx, i, c.out.PkScript, txscript.SigHashAll, c.key, c.kind == inP2PKH)
		case inP2TR:
			var sig []byte
			sig, err = txscript.RawTxInTaprootSignature(tx, hashes, i, c.out.Value, c.out.PkScript, nil, txscript.SigHashDefault, c.key)
			in.Witness = wire.TxWitness{sig}
		case inP2TRNUMSScript:
			leaf := txscript.NewBaseTapLeaf(c.redeem)
			var sig []byte
			if sig, err = txscript.RawTxInTapscriptSignature(tx, hashes, i, c.out.Value, c.out.PkScript, leaf, txscript.SigHashDefault, c.key); err != nil {
				break
			}
			h, herr := numsKey()
			if herr != nil {
				return herr
			}
			tree := txscript.AssembleTaprootScriptTree(leaf)
			ctrl := tree.LeafMerkleProofs[0].ToControlBlock(h)
			cb, cerr := ctrl.ToBytes()
			if cerr != nil {
				return cerr
			}
			in.Witness = wire.TxWitness{sig, c.redeem, cb}
		}
		if err != nil {
			return fmt.Errorf("sign input %d: %w", i, err)
		}
	}
	return nil
}

// independentTweak computes BIP-352's tweak of a transaction spending
// coins from the private keys the test holds, not from the transaction's
// scripts: A = a·G with a the sum of the eligible coins' keys (negated
// where a taproot key has an odd y), input_hash over the smallest
// outpoint of all inputs, tweak = input_hash·A. False when no coin is
// eligible.
func independentTweak(t *testing.T, coins []*spCoin) ([33]byte, bool) {
	t.Helper()
	var a btcec.ModNScalar
	found := false
	var least []byte
	for _, c := range coins {
		var op bytes.Buffer
		op.Write(c.op.Hash[:])
		_ = binary.Write(&op, binary.LittleEndian, c.op.Index)
		if least == nil || bytes.Compare(op.Bytes(), least) < 0 {
			least = op.Bytes()
		}
		k, ok := c.eligibleKey()
		if !ok {
			continue
		}
		ki := k.Key
		if c.kind == inP2TR && k.PubKey().SerializeCompressed()[0] == 0x03 {
			ki.Negate()
		}
		a.Add(&ki)
		found = true
	}
	if !found {
		return [33]byte{}, false
	}
	bigA := btcec.PrivKeyFromScalar(&a).PubKey()
	h := chainhash.TaggedHash([]byte("BIP0352/Inputs"), least, bigA.SerializeCompressed())
	var s btcec.ModNScalar
	if overflow := s.SetBytes((*[32]byte)(h)); overflow != 0 || s.IsZero() {
		t.Fatal("input hash is no scalar")
	}
	s.Mul(&a)
	return [33]byte(btcec.PrivKeyFromScalar(&s).PubKey().SerializeCompressed()), true
}

// txscriptTweakedPrefix is the SEC prefix (2 even, 3 odd) of the BIP-86
// output key of key.
func txscriptTweakedPrefix(key *btcec.PrivateKey) byte {
	return txscript.ComputeTaprootKeyNoScript(key.PubKey()).SerializeCompressed()[0]
}
