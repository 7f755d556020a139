package btcdtest

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
)

// keyDomain separates the harness's key derivation from any other use of
// the same seed.
const keyDomain = "cfindexd/btcdtest/key/v1"

// miningKeyIndex is the key whose P2PKH address receives coinbases.
const miningKeyIndex = 0

// keyPair is one derived key with the encodings its scripts need.
type keyPair struct {
	priv       *btcec.PrivateKey
	pub        *btcec.PublicKey
	compressed []byte // 33-byte SEC encoding
	hash160    []byte // HASH160(compressed)
	// tapOutput is the BIP-86 output key (no script tree), x-only; computed
	// lazily because it costs a scalar multiplication.
	tapOutput []byte
	// tapPriv is priv tweaked for a key-path spend of tapOutput.
	tapPriv *btcec.PrivateKey
	// used has bit k set once a script of Kind k was made from this key.
	used uint16
}

// usedBy reports whether a script of kind was already made from k.
func (k *keyPair) usedBy(kind Kind) bool { return k.used&(1<<kind) != 0 }

// deriveKey returns key index of seed: SHA256(domain || seed || index) as a
// scalar. Deterministic, so two wallets with one seed own the same keys.
func deriveKey(seed int64, index uint32) *keyPair {
	var buf [len(keyDomain) + 12]byte
	copy(buf[:], keyDomain)
	binary.BigEndian.PutUint64(buf[len(keyDomain):], uint64(seed))
	binary.BigEndian.PutUint32(buf[len(keyDomain)+8:], index)
	sum := sha256.Sum256(buf[:])
	priv, pub := btcec.PrivKeyFromBytes(sum[:])
	compressed := pub.SerializeCompressed()
	return &keyPair{priv: priv, pub: pub, compressed: compressed, hash160: address.Hash160(compressed)}
}

// taproot returns the BIP-86 output key (x-only) and the tweaked private
// key that signs for it.
func (k *keyPair) taproot() (outputKey []byte, tweaked *btcec.PrivateKey) {
	if k.tapOutput == nil {
		k.tapOutput = schnorr.SerializePubKey(txscript.ComputeTaprootKeyNoScript(k.pub))
		k.tapPriv = tweakTaprootKey(k)
	}
	return k.tapOutput, k.tapPriv
}

// tweakTaprootKey is txscript.TweakTaprootPrivKey(priv, nil) without its
// second public key derivation: negate priv if its public key has odd Y,
// then add the BIP-341 tweak hash of the x-only public key.
func tweakTaprootKey(k *keyPair) *btcec.PrivateKey {
	scalar := k.priv.Key
	if k.compressed[0] == 0x03 { // SEC prefix of an odd-Y compressed key
		scalar.Negate()
	}
	tweak := chainhash.TaggedHash(chainhash.TagTapTweak, k.compressed[1:])
	var t btcec.ModNScalar
	t.SetBytes((*[32]byte)(tweak))
	return btcec.PrivKeyFromScalar(scalar.Add(&t))
}
