package v2conn

import (
	"crypto/cipher"
	"encoding/binary"
	"fmt"

	"golang.org/x/crypto/chacha20"
	"golang.org/x/crypto/chacha20poly1305"
)

// BIP-324's two forward-secure ciphers, on golang.org/x/crypto's ChaCha20
// and ChaCha20-Poly1305, working in place. btcd's v2transport has the same
// two (FSChaCha20, FSChaCha20Poly1305), but every call returns a fresh
// buffer: a packet's contents were copied into a plaintext, sealed into a
// new ciphertext, and its length into a third slice. Here the caller lays
// the packet out once and both ciphers overwrite it; TestCiphersMatchBTCD
// holds the two implementations to the same bytes across rekeyings.

// rekeyInterval is how many packets (lengths, for the length cipher) one
// key encrypts before the next key is derived from it (BIP-324's
// REKEY_INTERVAL).
const rekeyInterval = 224

// keySize is the size of every key of the two ciphers.
const keySize = 32

// lengthBatch is how many lengths' keystream the length cipher draws from
// ChaCha20 at a time; it divides rekeyInterval, so a rekeying always finds
// the drawn keystream spent.
const lengthBatch = 32

// lengthCipher is BIP-324's FSChaCha20, which encrypts packet lengths: one
// ChaCha20 keystream, nonce (0, number of rekeyings), spent 3 bytes per
// packet; after every rekeyInterval lengths the next 32 keystream bytes
// become the key and the keystream restarts under the next nonce. The
// keystream is drawn lengthBatch lengths at a time into ks and spent from
// there, a few XORs a length instead of a call into ChaCha20 per length.
type lengthCipher struct {
	stream *chacha20.Cipher
	chunks uint64
	ks     [lengthBatch * LengthSize]byte
	used   int // bytes of ks spent: len(ks) when none is left
}

func newLengthCipher(key [keySize]byte) (*lengthCipher, error) {
	c := &lengthCipher{}
	if err := c.rekey(key); err != nil {
		return nil, err
	}
	return c, nil
}

// rekey starts the keystream of key under the nonce of the current
// rekeying.
func (c *lengthCipher) rekey(key [keySize]byte) error {
	var nonce [chacha20.NonceSize]byte
	binary.LittleEndian.PutUint64(nonce[4:], c.chunks/rekeyInterval)
	s, err := chacha20.NewUnauthenticatedCipher(key[:], nonce[:])
	if err != nil {
		return fmt.Errorf("length cipher: %w", err)
	}
	c.stream = s
	c.used = len(c.ks)
	return nil
}

// crypt encrypts or decrypts one packet's length (b, LengthSize bytes) in
// place.
func (c *lengthCipher) crypt(b []byte) error {
	if c.used == len(c.ks) {
		clear(c.ks[:])
		c.stream.XORKeyStream(c.ks[:], c.ks[:])
		c.used = 0
	}
	k := c.ks[c.used : c.used+LengthSize]
	b = b[:LengthSize]
	b[0] ^= k[0]
	b[1] ^= k[1]
	b[2] ^= k[2]
	c.used += LengthSize
	c.chunks++
	if c.chunks%rekeyInterval != 0 {
		return nil
	}
	var key [keySize]byte
	c.stream.XORKeyStream(key[:], key[:])
	return c.rekey(key)
}

// packetCipher is BIP-324's FSChaCha20Poly1305, which encrypts and
// authenticates packet contents: ChaCha20-Poly1305 with the nonce (packet
// number within the key, number of rekeyings); after every rekeyInterval
// packets the next key is the first 32 bytes of the current key's
// encryption of 32 zero bytes under the nonce (0xffffffff, number of
// rekeyings).
type packetCipher struct {
	aead    cipher.AEAD
	packets uint64
	// nonceBuf holds the nonce handed to aead: a slice of a local array
	// would escape through the interface call, an allocation per packet.
	nonceBuf [chacha20poly1305.NonceSize]byte
}

func newPacketCipher(key [keySize]byte) (*packetCipher, error) {
	aead, err := chacha20poly1305.New(key[:])
	if err != nil {
		return nil, fmt.Errorf("packet cipher: %w", err)
	}
	return &packetCipher{aead: aead}, nil
}

// nonce is the current packet's nonce, its first four bytes replaced by
// first for the rekeying; valid until the next call.
func (c *packetCipher) nonce(first uint32) []byte {
	binary.LittleEndian.PutUint32(c.nonceBuf[:4], first)
	binary.LittleEndian.PutUint64(c.nonceBuf[4:], c.packets/rekeyInterval)
	return c.nonceBuf[:]
}

// seal encrypts plain in place and appends its tag: plain must have
// tagSize bytes of capacity past its end, or the result is a new slice.
func (c *packetCipher) seal(plain, aad []byte) ([]byte, error) {
	out := c.aead.Seal(plain[:0], c.nonce(uint32(c.packets%rekeyInterval)), plain, aad)
	return out, c.advance()
}

// open authenticates and decrypts ct (contents and tag) in place and
// returns the contents, a prefix of ct. After a failure the cipher is no
// longer in step with the peer's, and the connection cannot go on.
func (c *packetCipher) open(ct, aad []byte) ([]byte, error) {
	plain, err := c.aead.Open(ct[:0], c.nonce(uint32(c.packets%rekeyInterval)), ct, aad)
	if err != nil {
		return nil, err
	}
	return plain, c.advance()
}

// advance counts a packet and rekeys after every rekeyInterval.
func (c *packetCipher) advance() error {
	if (c.packets+1)%rekeyInterval != 0 {
		c.packets++
		return nil
	}
	var buf [keySize + tagSize]byte
	key := c.aead.Seal(buf[:0], c.nonce(0xffffffff), buf[:keySize], nil)
	aead, err := chacha20poly1305.New(key[:keySize])
	if err != nil {
		return fmt.Errorf("packet cipher rekey: %w", err)
	}
	c.aead = aead
	c.packets++
	return nil
}
