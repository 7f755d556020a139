package v2conn

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"golang.org/x/sync/semaphore"
)

// Declared lengths over the cap are refused from the 3 length bytes alone:
// the stream holds nothing else, so any read of the body would fail with
// io.ErrUnexpectedEOF instead.
func TestDeclaredLengthOverTheCap(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxPayload int
		declared   int
		wantErr    error
	}{
		{"16 MiB", 0, maxLength, ErrPacketTooLarge},
		{"one over Core's cap", 0, 4_000_000 + longTypeSize + 1, ErrPacketTooLarge},
		{"at Core's cap", 0, 4_000_000 + longTypeSize, io.ErrUnexpectedEOF},
		{"one over a small cap", 1000, 1000 + longTypeSize + 1, ErrPacketTooLarge},
		{"at a small cap", 1000, 1000 + longTypeSize, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ini, resp := sessionPair(t)
			stream := sealer{ini.send}.length(t, tc.declared)
			c := responderConn(resp, bytes.NewReader(stream), Config{MaxPayload: tc.maxPayload})
			_, err := c.ReadMessage()
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == ErrPacketTooLarge && !errors.Is(err, ErrMisbehaving) {
				t.Fatalf("%v does not wrap ErrMisbehaving", err)
			}
		})
	}
}

// A short ID leaves 12 bytes of the long form's room to the payload; the
// payload cap still holds, as on v1.
func TestPayloadCap(t *testing.T) {
	ini, resp := sessionPair(t)
	s := sealer{ini.send}
	stream := append(s.packet(t, nil, false, message(t, "tx", make([]byte, 1000))),
		s.packet(t, nil, false, message(t, "tx", make([]byte, 1001)))...)
	c := responderConn(resp, bytes.NewReader(stream), Config{MaxPayload: 1000})
	if m, err := c.ReadMessage(); err != nil || len(m.Payload) != 1000 {
		t.Fatalf("%d bytes: %v", len(m.Payload), err)
	}
	if _, err := c.ReadMessage(); !errors.Is(err, ErrPacketTooLarge) {
		t.Fatalf("err %v", err)
	}
}

// The receive budget is checked before a packet is read and held by a
// message until its Release.
func TestRecvBudget(t *testing.T) {
	ini, resp := sessionPair(t)
	s := sealer{ini.send}
	var stream []byte
	for _, n := range []int{3000, 3000, 3000, 6000} {
		stream = append(stream, s.packet(t, nil, false, message(t, "block", make([]byte, n)))...)
	}
	budget := semaphore.NewWeighted(5000)
	c := responderConn(resp, bytes.NewReader(stream), Config{RecvBudget: budget})
	first, err := c.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	if budget.TryAcquire(5000 - 3000 - 1 - 1 - tagSize + 1) {
		t.Fatal("the message does not hold its bytes")
	}
	first.Release()
	first.Release() // twice is harmless
	second, err := c.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	second.Release()
	third, err := c.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	third.Release()
	if _, err := c.ReadMessage(); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("err %v, want ErrOverBudget", err)
	}
	if !budget.TryAcquire(5000) {
		t.Fatal("budget not returned")
	}
}

// Decoys are skipped, counted and bounded between two messages.
func TestDecoysBetweenMessages(t *testing.T) {
	ini, resp := sessionPair(t)
	s := sealer{ini.send}
	var stream []byte
	for range 3 {
		stream = append(stream, s.packet(t, nil, true, make([]byte, 300))...)
	}
	stream = append(stream, s.packet(t, nil, false, message(t, "ping", make([]byte, 8)))...)
	for range 4 {
		stream = append(stream, s.packet(t, nil, true, make([]byte, 300))...)
	}
	c := responderConn(resp, bytes.NewReader(stream), Config{MaxDecoyBytes: 3 * (300 + PacketOverhead)})
	if m, err := c.ReadMessage(); err != nil || m.Command != "ping" {
		t.Fatalf("%+v %v", m, err)
	}
	if st := c.Stats(); st.DecoyPackets != 3 || st.DecoyBytes != 3*(300+PacketOverhead) || st.Messages != 1 {
		t.Fatalf("stats %+v", st)
	}
	if _, err := c.ReadMessage(); !errors.Is(err, ErrDecoyFlood) {
		t.Fatalf("err %v, want ErrDecoyFlood", err)
	}
}

// A flipped bit anywhere in a packet fails it; reserved header bits are
// ignored.
func TestAuthentication(t *testing.T) {
	for _, flip := range []int{3, 4, 10, 28} {
		ini, resp := sessionPair(t)
		p := sealer{ini.send}.packet(t, nil, false, message(t, "pong", make([]byte, 8)))
		p[flip] ^= 1
		c := responderConn(resp, bytes.NewReader(p), Config{})
		if _, err := c.ReadMessage(); !errors.Is(err, ErrAuthentication) || !errors.Is(err, ErrMisbehaving) {
			t.Fatalf("bit flipped at %d: err %v", flip, err)
		}
	}
	// Reserved bits: seal a header of 0x7f by hand.
	ini2, resp2 := sessionPair(t)
	plain := append([]byte{0x7f}, message(t, "pong", nil)...)
	ct := sealer{ini2.send}.contents(t, plain)
	stream := append(sealer{ini2.send}.length(t, len(plain)-1), ct...)
	c := responderConn(resp2, bytes.NewReader(stream), Config{})
	if m, err := c.ReadMessage(); err != nil || m.Command != "pong" {
		t.Fatalf("reserved bits: %+v %v", m, err)
	}
}

func TestWriteMessageRefuses(t *testing.T) {
	_, resp := sessionPair(t)
	var out bytes.Buffer
	c := responderConn(resp, bytes.NewReader(nil), Config{MaxPayload: 100})
	c.wr.w = &out
	if _, err := c.WriteMessage("toolongcommand", nil); !errors.Is(err, ErrBadCommand) {
		t.Fatalf("err %v", err)
	}
	if _, err := c.WriteMessage("tx", make([]byte, 60), make([]byte, 41)); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("err %v", err)
	}
	if out.Len() != 0 {
		t.Fatalf("%d bytes written", out.Len())
	}
	n, err := c.WriteMessage("tx", make([]byte, 60), make([]byte, 40))
	if err != nil || n != 1+100+PacketOverhead || out.Len() != n {
		t.Fatalf("%d bytes, %d written: %v", n, out.Len(), err)
	}
}

// AppendMessage gathers packets into the caller's buffer, sealed in turn:
// written at once they read back in order, and a WriteMessage after them
// follows; a malformed command or an oversized payload appends nothing.
func TestAppendMessage(t *testing.T) {
	ini, resp := sessionPair(t)
	var wire bytes.Buffer
	sender := responderConn(resp, bytes.NewReader(nil), Config{MaxPayload: 100_000})
	sender.wr.w = &wire
	big := bytes.Repeat([]byte{3}, 70_000)
	batch := []byte("already queued")
	var err error
	for _, m := range []struct {
		command string
		payload [][]byte
	}{
		{"cfilter", [][]byte{{1, 2}, {3}}}, {"cfheaders", [][]byte{big}}, {"sendheaders", nil},
	} {
		if batch, err = sender.AppendMessage(batch, m.command, m.payload...); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []struct {
		command string
		payload []byte
		want    error
	}{
		{"toolongcommand", nil, ErrBadCommand}, {"tx", make([]byte, 100_001), ErrMessageTooLarge},
	} {
		before := len(batch)
		if batch, err = sender.AppendMessage(batch, bad.command, bad.payload); !errors.Is(err, bad.want) || len(batch) != before {
			t.Fatalf("%s: %v, %d bytes appended", bad.command, err, len(batch)-before)
		}
	}
	wire.Write(batch[len("already queued"):])
	if _, err := sender.WriteMessage("ping", make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	receiver := responderConn(ini, &wire, Config{MaxPayload: 100_000})
	for _, want := range []struct {
		command string
		payload []byte
	}{
		{"cfilter", []byte{1, 2, 3}}, {"cfheaders", big}, {"sendheaders", nil}, {"ping", make([]byte, 8)},
	} {
		m, err := receiver.ReadMessage()
		if err != nil || m.Command != want.command || !bytes.Equal(m.Payload, want.payload) {
			t.Fatalf("read %q (%d bytes), want %q: %v", m.Command, len(m.Payload), want.command, err)
		}
	}
}
