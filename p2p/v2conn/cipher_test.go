package v2conn

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/btcsuite/btcd/v2transport"
)

// TestCiphersMatchBTCD holds the in-place ciphers to btcd's v2transport,
// a separate implementation of the same BIP-324 ciphers, over 1,000
// packets of random sizes (past four rekeyings of each): the same
// ciphertexts, and each side opens the other's.
func TestCiphersMatchBTCD(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 24))
	var lengthKey, packetKey [keySize]byte
	for i := range lengthKey {
		lengthKey[i], packetKey[i] = byte(rng.Uint32()), byte(rng.Uint32())
	}
	ourLen, err := newLengthCipher(lengthKey)
	if err != nil {
		t.Fatal(err)
	}
	ourPkt, err := newPacketCipher(packetKey)
	if err != nil {
		t.Fatal(err)
	}
	ourOpen, err := newPacketCipher(packetKey)
	if err != nil {
		t.Fatal(err)
	}
	theirLen, err := v2transport.NewFSChaCha20(bytes.Clone(lengthKey[:]))
	if err != nil {
		t.Fatal(err)
	}
	theirPkt, err := v2transport.NewFSChaCha20Poly1305(bytes.Clone(packetKey[:]))
	if err != nil {
		t.Fatal(err)
	}
	theirOpen, err := v2transport.NewFSChaCha20Poly1305(bytes.Clone(packetKey[:]))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		length := []byte{byte(rng.Uint32()), byte(rng.Uint32()), byte(rng.Uint32())}
		want, err := theirLen.Crypt(length)
		if err != nil {
			t.Fatal(err)
		}
		got := bytes.Clone(length)
		if err := ourLen.crypt(got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("length %d: %x, btcd %x", i, got, want)
		}

		plain := make([]byte, rng.IntN(3000))
		for j := range plain {
			plain[j] = byte(rng.Uint32())
		}
		var aad []byte
		if i%7 == 0 {
			aad = plain[:len(plain)/3]
		}
		wantCT, err := theirPkt.Encrypt(aad, plain)
		if err != nil {
			t.Fatal(err)
		}
		gotCT, err := ourPkt.seal(bytes.Clone(plain), aad)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(gotCT, wantCT) {
			t.Fatalf("packet %d of %d bytes: ciphertexts differ", i, len(plain))
		}
		// Each opens what the other sealed: ours btcd's, btcd ours.
		opened, err := ourOpen.open(bytes.Clone(wantCT), aad)
		if err != nil || !bytes.Equal(opened, plain) {
			t.Fatalf("packet %d: opening btcd's: %v", i, err)
		}
		if back, err := theirOpen.Decrypt(aad, gotCT); err != nil || !bytes.Equal(back, plain) {
			t.Fatalf("packet %d: btcd opening ours: %v", i, err)
		}
	}
}

// A tampered packet or the wrong associated data fails to open, and
// nothing is handed back.
func TestOpenRefusesTampering(t *testing.T) {
	var key [keySize]byte
	for _, tc := range []struct {
		name string
		flip int
		aad  []byte
	}{
		{"first byte", 0, nil},
		{"tag", 20, nil},
		{"other associated data", -1, []byte("garbage")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seal, _ := newPacketCipher(key)
			open, _ := newPacketCipher(key)
			ct, err := seal.seal([]byte("contents"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.flip >= 0 {
				ct[tc.flip] ^= 1
			}
			if plain, err := open.open(ct, tc.aad); err == nil || plain != nil {
				t.Fatalf("opened %q, err %v", plain, err)
			}
		})
	}
}
