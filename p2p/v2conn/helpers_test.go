package v2conn

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/ellswift"
	"github.com/btcsuite/btcd/wire/v2"
)

const testNet = wire.MainNet

// testDeadline is the generous bound of every blocking step in the tests.
const testDeadline = 30 * time.Second

// sessionPair returns an initiator's and a responder's sessions of one
// connection, derived from a fixed secret.
func sessionPair(t testing.TB) (initiator, responder session) {
	t.Helper()
	k, err := deriveKeys(bytes.Repeat([]byte{7}, 32), testNet)
	if err != nil {
		t.Fatal(err)
	}
	if initiator, err = newSession(k, true); err != nil {
		t.Fatal(err)
	}
	if responder, err = newSession(k, false); err != nil {
		t.Fatal(err)
	}
	return initiator, responder
}

// sealer builds an initiator's packets, well-formed or not.
type sealer struct{ dir direction }

// packet is one packet of contents (the header byte is added).
func (s sealer) packet(t testing.TB, aad []byte, decoy bool, contents []byte) []byte {
	t.Helper()
	pw := packetWriter{dir: s.dir}
	pkt, err := pw.seal(aad, decoy, nil, [][]byte{contents})
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(pkt)
}

// length is an encrypted length field declaring n bytes of contents.
func (s sealer) length(t testing.TB, n int) []byte {
	t.Helper()
	b := []byte{byte(n), byte(n >> 8), byte(n >> 16)}
	if err := s.dir.length.crypt(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// contents encrypts plain (header byte included) as the next packet's
// contents, with its tag, leaving plain as it was.
func (s sealer) contents(t testing.TB, plain []byte) []byte {
	t.Helper()
	ct, err := s.dir.packet.seal(bytes.Clone(plain), nil)
	if err != nil {
		t.Fatal(err)
	}
	return ct
}

// message is the contents of a message: type and payload.
func message(t testing.TB, command string, payload []byte) []byte {
	t.Helper()
	b, ok := AppendType(nil, command)
	if !ok {
		t.Fatalf("bad command %q", command)
	}
	return append(b, payload...)
}

// responderConn returns a responder Conn that reads stream.
func responderConn(resp session, stream io.Reader, cfg Config) *Conn {
	cfg, err := cfg.withDefaults()
	if err != nil {
		panic(err)
	}
	return newConn(bufio.NewReaderSize(stream, readBufferSize), io.Discard, resp, cfg)
}

// scriptedInitiator plays a v2 initiator in memory for respond: it sends
// its key and garbage at once and, when the responder's key arrives,
// computes the session and queues its terminator (unless omitted), its
// decoys, its version packet and then whatever after builds. Reads past
// the queue return io.EOF; writes after the first are discarded.
type scriptedInitiator struct {
	t              testing.TB
	priv           *btcec.PrivateKey
	key            [KeySize]byte
	garbage        []byte
	omitTerminator bool
	decoys         []int
	after          func(s sealer) []byte
	in             bytes.Buffer
	sess           session
	answered       bool
}

func newScriptedInitiator(t testing.TB, garbage []byte) *scriptedInitiator {
	t.Helper()
	priv, key, err := ellswift.EllswiftCreate()
	if err != nil {
		t.Fatal(err)
	}
	si := &scriptedInitiator{t: t, priv: priv, key: key, garbage: garbage}
	si.in.Write(key[:])
	si.in.Write(garbage)
	return si
}

func (si *scriptedInitiator) Read(p []byte) (int, error) { return si.in.Read(p) }

func (si *scriptedInitiator) Write(p []byte) (int, error) {
	if si.answered {
		return len(p), nil
	}
	si.answered = true
	var theirs [KeySize]byte
	copy(theirs[:], p)
	s, err := agree(si.priv, si.key, theirs, true, testNet)
	if err != nil {
		si.t.Fatal(err)
	}
	si.sess = s
	if !si.omitTerminator {
		si.in.Write(s.sendTerm[:])
	}
	snd := sealer{dir: s.send}
	aad := si.garbage
	for _, n := range si.decoys {
		si.in.Write(snd.packet(si.t, aad, true, make([]byte, n)))
		aad = nil
	}
	si.in.Write(snd.packet(si.t, aad, false, nil))
	if si.after != nil {
		si.in.Write(si.after(snd))
	}
	return len(p), nil
}

// noDeadlines makes an io.ReadWriter a net.Conn for Accept.
type noDeadlines struct {
	io.ReadWriter
}

func (noDeadlines) Close() error                     { return nil }
func (noDeadlines) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (noDeadlines) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (noDeadlines) SetDeadline(time.Time) error      { return nil }
func (noDeadlines) SetReadDeadline(time.Time) error  { return nil }
func (noDeadlines) SetWriteDeadline(time.Time) error { return nil }
