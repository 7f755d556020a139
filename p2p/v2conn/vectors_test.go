package v2conn

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/hex"
	"os"
	"strconv"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/ellswift"
)

// packetVector is one row of BIP-324's packet encoding test vectors.
type packetVector struct {
	idx                                            int
	priv, ellswiftOurs, ellswiftTheirs             []byte
	initiating                                     bool
	content                                        []byte
	multiply                                       int
	aad                                            []byte
	ignore                                         bool
	sharedSecret                                   []byte
	initiatorL, initiatorP, responderL, responderP []byte
	sendTerm, recvTerm, sessionID                  []byte
	ciphertext, ciphertextEnd                      []byte
}

func readPacketVectors(t *testing.T) []packetVector {
	t.Helper()
	f, err := os.Open("testdata/bip324_packet_vectors.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	var out []packetVector
	for _, r := range rows[1:] {
		hx := func(name string) []byte {
			b, err := hex.DecodeString(r[col[name]])
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return b
		}
		num := func(name string) int {
			n, err := strconv.Atoi(r[col[name]])
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return n
		}
		out = append(out, packetVector{
			idx: num("in_idx"), priv: hx("in_priv_ours"), ellswiftOurs: hx("in_ellswift_ours"),
			ellswiftTheirs: hx("in_ellswift_theirs"), initiating: num("in_initiating") == 1,
			content: hx("in_content"), multiply: num("in_multiply"), aad: hx("in_aad"),
			ignore: num("in_ignore") == 1, sharedSecret: hx("mid_shared_secret"),
			initiatorL: hx("mid_initiator_l"), initiatorP: hx("mid_initiator_p"),
			responderL: hx("mid_responder_l"), responderP: hx("mid_responder_p"),
			sendTerm: hx("mid_send_garbage_terminator"), recvTerm: hx("mid_recv_garbage_terminator"),
			sessionID: hx("mid_session_id"), ciphertext: hx("out_ciphertext"),
			ciphertextEnd: hx("out_ciphertext_endswith"),
		})
	}
	if len(out) < 6 {
		t.Fatalf("%d vectors", len(out))
	}
	return out
}

// TestBIP324PacketVectors checks the ECDH, the key derivation, the sealing
// of the in_idx-th packet and its opening against BIP-324's own numbers,
// so the package is not checked only against btcd's peer.
func TestBIP324PacketVectors(t *testing.T) {
	for _, v := range readPacketVectors(t) {
		t.Run(strconv.Itoa(v.idx), func(t *testing.T) {
			priv, _ := btcec.PrivKeyFromBytes(v.priv)
			ours, theirs := [KeySize]byte(v.ellswiftOurs), [KeySize]byte(v.ellswiftTheirs)
			secret, err := ellswift.V2Ecdh(priv, theirs, ours, v.initiating)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(secret[:], v.sharedSecret) {
				t.Fatalf("shared secret %x, want %x", secret[:], v.sharedSecret)
			}
			k, err := deriveKeys(secret[:], testNet)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name      string
				got, want []byte
			}{
				{"initiator_L", k.initiatorL[:], v.initiatorL}, {"initiator_P", k.initiatorP[:], v.initiatorP},
				{"responder_L", k.responderL[:], v.responderL}, {"responder_P", k.responderP[:], v.responderP},
				{"session_id", k.sessionID[:], v.sessionID},
			} {
				if !bytes.Equal(c.got, c.want) {
					t.Fatalf("%s %x, want %x", c.name, c.got, c.want)
				}
			}
			sender, err := newSession(k, v.initiating)
			if err != nil {
				t.Fatal(err)
			}
			receiver, err := newSession(k, !v.initiating)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(sender.sendTerm[:], v.sendTerm) || !bytes.Equal(sender.recvTerm[:], v.recvTerm) {
				t.Fatalf("terminators %x %x, want %x %x", sender.sendTerm, sender.recvTerm, v.sendTerm, v.recvTerm)
			}
			if receiver.recvTerm != sender.sendTerm || receiver.id != sender.id {
				t.Fatal("the two sides disagree")
			}

			// Packets 0 to idx-1 move both sides' ciphers along.
			var wire bytes.Buffer
			pw := packetWriter{w: &wire, dir: sender.send}
			pr := packetReader{r: bufio.NewReader(&wire), dir: receiver.recv, maxContents: maxLength}
			for i := range v.idx {
				if _, err := pw.write(false, nil, nil); err != nil {
					t.Fatal(err)
				}
				if p, err := pr.next(nil, false); err != nil || len(p.contents) != 0 || p.decoy {
					t.Fatalf("packet %d: %+v %v", i, p, err)
				}
			}
			content := bytes.Repeat(v.content, v.multiply)
			sealed, err := pw.seal(v.aad, v.ignore, nil, [][]byte{content})
			if err != nil {
				t.Fatal(err)
			}
			got := bytes.Clone(sealed)
			switch {
			case len(v.ciphertext) > 0:
				if !bytes.Equal(got, v.ciphertext) {
					t.Fatalf("ciphertext %x, want %x", got, v.ciphertext)
				}
				got = v.ciphertext // open the BIP's bytes, not ours
			case !bytes.HasSuffix(got, v.ciphertextEnd):
				t.Fatalf("ciphertext ends %x, want %x", got[len(got)-len(v.ciphertextEnd):], v.ciphertextEnd)
			}
			wire.Write(got)
			p, err := pr.next(v.aad, false)
			if err != nil {
				t.Fatal(err)
			}
			if p.decoy != v.ignore || !bytes.Equal(p.contents, content) || p.wireSize != len(got) {
				t.Fatalf("opened decoy=%v %d bytes (%d on the wire), want decoy=%v %d bytes", p.decoy, len(p.contents), p.wireSize, v.ignore, len(content))
			}
		})
	}
}
