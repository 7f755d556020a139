package v2conn

import (
	"bufio"
	"bytes"
	"errors"
	"testing"
)

// The attack tools' writes are what a responder expects of them: decoys
// are authenticated and dropped before the message after them, and a
// declared 16 MiB length is refused as too large before anything is read
// for it, with nothing after it on the wire.
func TestMisbehavingWrites(t *testing.T) {
	init, resp := sessionPair(t)
	cfg, err := DefaultConfig(testNet).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	var wire bytes.Buffer
	sender := newConn(bufio.NewReader(&bytes.Buffer{}), &wire, init, cfg)
	for _, size := range []int{0, 100, 4000} {
		if _, err := sender.WriteDecoy(make([]byte, size)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sender.WriteMessage("ping", make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	if n, err := sender.WriteLengthOnly(maxLength); err != nil || n != LengthSize {
		t.Fatalf("length only: %d bytes, %v", n, err)
	}
	if _, err := sender.WriteLengthOnly(maxLength + 1); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("a length over 3 bytes: %v", err)
	}
	receiver := responderConn(resp, &wire, cfg)
	m, err := receiver.ReadMessage()
	if err != nil || m.Command != "ping" {
		t.Fatalf("read %q: %v", m.Command, err)
	}
	if s := receiver.Stats(); s.DecoyPackets != 3 {
		t.Fatalf("%d decoys read, want 3", s.DecoyPackets)
	}
	if _, err := receiver.ReadMessage(); !errors.Is(err, ErrPacketTooLarge) {
		t.Fatalf("a declared 16 MiB packet: %v, want ErrPacketTooLarge", err)
	}
	if wire.Len() != 0 {
		t.Fatalf("%d bytes left after the length", wire.Len())
	}
}
