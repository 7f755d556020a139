package v2conn

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"
	"github.com/cfindexd/cfindexd/internal/tcptest"
)

// acceptScripted runs respond against a scripted initiator.
func acceptScripted(si *scriptedInitiator, cfg Config) (*Conn, error) {
	cfg.Net = testNet
	return Accept(context.Background(), noDeadlines{si}, nil, cfg)
}

func TestHandshakeGarbage(t *testing.T) {
	for _, tc := range []struct {
		name      string
		garbage   int
		omit      bool
		wantErr   error
		wantStats int64
	}{
		{"none", 0, false, nil, 0},
		{"one byte", 1, false, nil, 1},
		{"maximal", MaxGarbage, false, nil, MaxGarbage},
		{"one byte too many", MaxGarbage + 1, false, ErrNoTerminator, 0},
		{"no terminator", MaxGarbage + TerminatorSize + 1000, true, ErrNoTerminator, 0},
		{"no terminator, short", 100, true, io.ErrUnexpectedEOF, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := make([]byte, tc.garbage)
			_, _ = rand.Read(g)
			si := newScriptedInitiator(t, g)
			si.omitTerminator = tc.omit
			si.after = func(s sealer) []byte { return s.packet(t, nil, false, message(t, "ping", make([]byte, 8))) }
			c, err := acceptScripted(si, Config{})
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				if tc.wantErr == ErrNoTerminator && !errors.Is(err, ErrMisbehaving) {
					t.Fatalf("%v does not wrap ErrMisbehaving", err)
				}
				return
			}
			if c.Stats().GarbageBytes != tc.wantStats {
				t.Fatalf("stats %+v", c.Stats())
			}
			if m, err := c.ReadMessage(); err != nil || m.Command != "ping" {
				t.Fatalf("%+v %v", m, err)
			}
			if c.SessionID() != si.sess.id {
				t.Fatal("session IDs differ")
			}
		})
	}
}

// A garbage without terminator is refused once 4,095 + 16 bytes of it have
// arrived: Accept does not wait for more (the connection stays open), and
// one byte fewer is not enough to decide.
func TestNoTerminatorRefusedAfter4111Bytes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		garbage int
		wantErr error
	}{
		{"4111 bytes", MaxGarbage + TerminatorSize, ErrNoTerminator},
		{"4110 bytes then close", MaxGarbage + TerminatorSize - 1, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server, client := tcptest.Pair(t)
			key := make([]byte, KeySize+tc.garbage)
			_, _ = rand.Read(key)
			key[0] = 0 // not the magic's first byte: v2
			go func() {
				_, _ = client.Write(key)
				if tc.wantErr == io.ErrUnexpectedEOF {
					_ = client.(*net.TCPConn).CloseWrite()
				}
				_, _ = io.Copy(io.Discard, client)
			}()
			_, err := acceptOn(context.Background(), server, DefaultConfig(testNet))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// The first bytes of a v1 version message of another network are refused
// as such (Core disconnects), not taken as a key.
func TestWrongNetworkV1(t *testing.T) {
	server, client := tcptest.Pair(t)
	hdr := v1Prefix(wire.TestNet3)
	go func() { _, _ = client.Write(append(hdr[:], make([]byte, 100)...)) }()
	_, err := acceptOn(context.Background(), server, DefaultConfig(testNet))
	if !errors.Is(err, ErrWrongNetwork) {
		t.Fatalf("err %v", err)
	}
}

func TestHandshakeDeadlineAndCancel(t *testing.T) {
	t.Run("deadline", func(t *testing.T) {
		server, client := tcptest.Pair(t)
		go func() { _, _ = client.Write([]byte{1, 2, 3}) }()
		cfg := DefaultConfig(testNet)
		cfg.HandshakeTimeout = 50 * time.Millisecond
		_, err := acceptOn(context.Background(), server, cfg)
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("err %v, want a timeout", err)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		server, client := tcptest.Pair(t)
		go func() { _, _ = client.Write([]byte{1, 2, 3}) }()
		ctx, cancel := context.WithCancel(context.Background())
		accepted := make(chan error, 1)
		go func() {
			_, err := acceptOn(ctx, server, DefaultConfig(testNet))
			accepted <- err
		}()
		// Wait for our key: the handshake is under way.
		if _, err := io.ReadFull(client, make([]byte, KeySize)); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := <-accepted; !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want context.Canceled", err)
		}
	})
}

// countingAdmission counts acquisitions and releases, refusing after limit.
type countingAdmission struct {
	acquired, released atomic.Int32
	limit              int32
}

var errBusy = errors.New("busy")

func (a *countingAdmission) Acquire() (func(), error) {
	if a.acquired.Load() >= a.limit {
		return nil, errBusy
	}
	a.acquired.Add(1)
	return func() { a.released.Add(1) }, nil
}

func TestHandshakeAdmission(t *testing.T) {
	t.Run("two steps admitted", func(t *testing.T) {
		a := &countingAdmission{limit: 100}
		si := newScriptedInitiator(t, nil)
		if _, err := acceptScripted(si, Config{Admission: a}); err != nil {
			t.Fatal(err)
		}
		if a.acquired.Load() != 2 || a.released.Load() != 2 {
			t.Fatalf("acquired %d, released %d", a.acquired.Load(), a.released.Load())
		}
	})
	t.Run("refused before our key", func(t *testing.T) {
		var out bytes.Buffer
		rw := struct {
			io.Reader
			io.Writer
		}{bytes.NewReader(make([]byte, KeySize)), &out}
		_, err := Accept(context.Background(), noDeadlines{rw}, nil, Config{Net: testNet, Admission: &countingAdmission{}})
		if !errors.Is(err, errBusy) || out.Len() != 0 {
			t.Fatalf("err %v, %d bytes sent", err, out.Len())
		}
	})
}

func TestDecoysBeforeVersion(t *testing.T) {
	for _, tc := range []struct {
		name    string
		decoys  []int
		wantErr error
	}{
		{"within the limit", []int{0, 100, 400}, nil},
		{"over the limit", []int{600, 600}, ErrDecoyFlood},
	} {
		t.Run(tc.name, func(t *testing.T) {
			si := newScriptedInitiator(t, []byte("some garbage"))
			si.decoys = tc.decoys
			c, err := acceptScripted(si, Config{MaxDecoyBytes: 1000})
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err == nil && c.Stats().DecoyPackets != int64(len(tc.decoys)) {
				t.Fatalf("stats %+v", c.Stats())
			}
		})
	}
}

func TestConfigChecks(t *testing.T) {
	for _, cfg := range []Config{
		{MaxPayload: -1}, {MaxPayload: maxLength}, {MaxDecoyBytes: -1},
		{MaxGarbage: MaxGarbage + 1}, {MaxGarbage: -1}, {HandshakeTimeout: -time.Second},
	} {
		if _, err := Accept(context.Background(), noDeadlines{}, nil, cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}
