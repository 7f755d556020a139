package v2conn

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/ellswift"
	"github.com/btcsuite/btcd/wire/v2"
	"golang.org/x/crypto/hkdf"
)

// sessionKeys are BIP-324's keys of one connection, derived from the ECDH
// secret: both directions' length and packet keys, both garbage terminators
// and the session ID.
type sessionKeys struct {
	sessionID                                      [32]byte
	initiatorL, initiatorP, responderL, responderP [32]byte
	initiatorTerm, responderTerm                   [TerminatorSize]byte
}

// deriveKeys expands secret with HKDF-SHA256, salted with
// "bitcoin_v2_shared_secret" and net's magic, one label per key (BIP-324).
func deriveKeys(secret []byte, net wire.BitcoinNet) (sessionKeys, error) {
	salt := make([]byte, 0, 28)
	salt = append(salt, "bitcoin_v2_shared_secret"...)
	salt = binary.LittleEndian.AppendUint32(salt, uint32(net))
	prk := hkdf.Extract(sha256.New, secret, salt)
	var k sessionKeys
	var terms [2 * TerminatorSize]byte
	for _, out := range []struct {
		label string
		dst   []byte
	}{
		{"session_id", k.sessionID[:]},
		{"initiator_L", k.initiatorL[:]},
		{"initiator_P", k.initiatorP[:]},
		{"responder_L", k.responderL[:]},
		{"responder_P", k.responderP[:]},
		{"garbage_terminators", terms[:]},
	} {
		if _, err := io.ReadFull(hkdf.Expand(sha256.New, prk, []byte(out.label)), out.dst); err != nil {
			return k, fmt.Errorf("derive %s: %w", out.label, err)
		}
	}
	copy(k.initiatorTerm[:], terms[:TerminatorSize])
	copy(k.responderTerm[:], terms[TerminatorSize:])
	return k, nil
}

// direction is the cipher state of one direction of a connection: the
// stream cipher of packet lengths and the AEAD of packet contents, both
// rekeyed every 224 packets (cipher.go).
type direction struct {
	length *lengthCipher
	packet *packetCipher
}

func newDirection(lengthKey, packetKey [32]byte) (direction, error) {
	l, err := newLengthCipher(lengthKey)
	if err != nil {
		return direction{}, err
	}
	p, err := newPacketCipher(packetKey)
	if err != nil {
		return direction{}, err
	}
	return direction{length: l, packet: p}, nil
}

// session is one side's view of a connection's keys.
type session struct {
	send, recv         direction
	sendTerm, recvTerm [TerminatorSize]byte
	id                 [32]byte
}

// newSession sets up the ciphers of the initiator's or the responder's
// side.
func newSession(k sessionKeys, initiator bool) (session, error) {
	sendL, sendP, recvL, recvP := k.responderL, k.responderP, k.initiatorL, k.initiatorP
	s := session{sendTerm: k.responderTerm, recvTerm: k.initiatorTerm, id: k.sessionID}
	if initiator {
		sendL, sendP, recvL, recvP = recvL, recvP, sendL, sendP
		s.sendTerm, s.recvTerm = s.recvTerm, s.sendTerm
	}
	var err error
	if s.send, err = newDirection(sendL, sendP); err != nil {
		return s, err
	}
	if s.recv, err = newDirection(recvL, recvP); err != nil {
		return s, err
	}
	return s, nil
}

// agree computes the ECDH secret of our key and theirs (BIP-324's tagged
// x-only ECDH over ElligatorSwift encodings) and sets up our side.
func agree(ours *btcec.PrivateKey, oursEncoded, theirs [KeySize]byte, initiator bool, net wire.BitcoinNet) (session, error) {
	secret, err := ellswift.V2Ecdh(ours, theirs, oursEncoded, initiator)
	if err != nil {
		return session{}, fmt.Errorf("v2 ecdh: %w", err)
	}
	k, err := deriveKeys(secret[:], net)
	if err != nil {
		return session{}, err
	}
	return newSession(k, initiator)
}
