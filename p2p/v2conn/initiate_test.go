package v2conn

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2/ellswift"
	"github.com/btcsuite/btcd/v2transport"
	"github.com/cfindexd/cfindexd/internal/tcptest"
)

// btcdResponder runs btcd's v2 peer as the responder on conn.
func btcdResponder(conn net.Conn, garbage int, decoys []int) (*v2transport.Peer, error) {
	return btcdPeer(conn, false, garbage, decoys)
}

// TestInteropWithBTCDResponder: Initiate against btcd's v2 peer as the
// responder, with its garbage from none to the most BIP-324 allows and
// with decoys before its version packet; then every message of the
// server both ways, past the rekeying interval.
func TestInteropWithBTCDResponder(t *testing.T) {
	for _, tc := range []struct {
		name       string
		garbage    int
		decoys     []int
		ourGarbage int
	}{
		{"no garbage", 0, nil, 0},
		{"maximal garbage", MaxGarbage, nil, MaxGarbage},
		{"decoys before version", 17, []int{0, 1, 5000}, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server, client := tcptest.Pair(t)
			type result struct {
				p   *v2transport.Peer
				err error
			}
			done := make(chan result, 1)
			go func() {
				p, err := btcdResponder(server, tc.garbage, tc.decoys)
				done <- result{p, err}
			}()
			cfg := DefaultConfig(testNet)
			cfg.MaxGarbage = tc.ourGarbage
			c, err := Initiate(context.Background(), client, cfg)
			if err != nil {
				t.Fatalf("initiate: %v", err)
			}
			r := <-done
			if r.err != nil {
				t.Fatalf("btcd responder: %v", r.err)
			}
			if got := c.Stats(); got.GarbageBytes != int64(tc.garbage) || got.DecoyPackets != int64(len(tc.decoys)) {
				t.Fatalf("stats %+v, want %d garbage bytes and %d decoys", got, tc.garbage, len(tc.decoys))
			}
			exchange(t, r.p, c)
		})
	}
}

// TestInitiateAgainstAccept: our two sides agree on the session (the same
// session ID) and carry messages both ways, large ones included.
func TestInitiateAgainstAccept(t *testing.T) {
	server, client := tcptest.Pair(t)
	accepted := make(chan *Conn, 1)
	errc := make(chan error, 1)
	go func() {
		c, err := acceptOn(context.Background(), server, DefaultConfig(testNet))
		errc <- err
		accepted <- c
	}()
	ini, err := Initiate(context.Background(), client, DefaultConfig(testNet))
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	resp := <-accepted
	if ini.SessionID() != resp.SessionID() {
		t.Fatal("the two sides disagree on the session ID")
	}
	for i, size := range []int{0, 8, 20_000, 1_500_000} {
		payload := bytes.Repeat([]byte{byte(i + 1)}, size)
		for _, dir := range []struct{ from, to *Conn }{{ini, resp}, {resp, ini}} {
			go func() {
				_, err := dir.from.WriteMessage("cfilter", payload)
				errc <- err
			}()
			m, err := dir.to.ReadTransient()
			if err != nil || m.Command != "cfilter" || !bytes.Equal(m.Payload, payload) {
				t.Fatalf("%d bytes: read %q of %d bytes: %v", size, m.Command, len(m.Payload), err)
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		}
	}
}

// fakeResponder answers on a loopback listener with script, after reading
// the initiator's key (the initiator sends no garbage, so that a hang-up
// after it is a clean close, not a reset over unread bytes).
func fakeResponder(t *testing.T, script func(conn net.Conn)) net.Conn {
	t.Helper()
	server, client := tcptest.Pair(t)
	go func() {
		_ = server.SetDeadline(time.Now().Add(testDeadline))
		var key [KeySize]byte
		if _, err := io.ReadFull(server, key[:]); err != nil {
			return
		}
		script(server)
	}()
	return client
}

// The initiator's bounds: a responder that hangs up before its key is
// ErrV1Only (Core's cue to reconnect over v1), one that hangs up inside
// its key is not, and a responder's garbage is held to BIP-324's 4,095
// bytes as an initiator's is.
func TestInitiateRefuses(t *testing.T) {
	_, key, err := ellswift.EllswiftCreate()
	if err != nil {
		t.Fatal(err)
	}
	noise := make([]byte, MaxGarbage+TerminatorSize+1)
	_, _ = rand.Read(noise)
	for _, tc := range []struct {
		name    string
		script  func(net.Conn)
		want    error
		notWant error
	}{
		{"v1 only: hangs up", func(c net.Conn) { c.Close() }, ErrV1Only, nil},
		{"v1 only: resets", func(c net.Conn) {
			_ = c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}, ErrV1Only, nil},
		{"hangs up inside its key", func(c net.Conn) {
			_, _ = c.Write(key[:10])
			c.Close()
		}, io.ErrUnexpectedEOF, ErrV1Only},
		{"garbage without terminator", func(c net.Conn) {
			_, _ = c.Write(append(key[:], noise...))
			_, _ = io.Copy(io.Discard, c)
		}, ErrNoTerminator, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fakeResponder(t, tc.script)
			cfg := DefaultConfig(testNet)
			cfg.MaxGarbage = 0
			_, err := Initiate(context.Background(), client, cfg)
			if !errors.Is(err, tc.want) || tc.notWant != nil && errors.Is(err, tc.notWant) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

// A cancelled context ends a handshake the responder never answers.
func TestInitiateEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	client := fakeResponder(t, func(c net.Conn) {
		cancel() // the initiator is waiting for our key
		_, _ = io.Copy(io.Discard, c)
	})
	cfg := DefaultConfig(testNet)
	cfg.MaxGarbage = 0
	if _, err := Initiate(ctx, client, cfg); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
}
