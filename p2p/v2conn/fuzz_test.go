package v2conn

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"testing"
	"time"
)

// FuzzHandshake feeds arbitrary first bytes to Detect and, for a v2
// initiator, the rest to the responder's handshake: no input panics or
// blocks (the stream ends), whatever it declares.
func FuzzHandshake(f *testing.F) {
	prefix := v1Prefix(testNet)
	f.Add(prefix[:])
	f.Add(bytes.Repeat([]byte{0x42}, KeySize+100))
	f.Add(append(bytes.Repeat([]byte{1}, KeySize), bytes.Repeat([]byte{2}, MaxGarbage+TerminatorSize+1)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &chunkReader{chunks: [][]byte{data}, err: io.EOF}
		tr, first, err := Detect(r, testNet, time.Time{})
		if err != nil || tr != V2 {
			return
		}
		rest, _ := io.ReadAll(r)
		rw := struct {
			io.Reader
			io.Writer
		}{bytes.NewReader(rest), io.Discard}
		if _, err := Accept(context.Background(), noDeadlines{rw}, first, Config{Net: testNet}); err == nil {
			t.Fatal("a handshake completed without the session keys")
		}
	})
}

// FuzzReadMessage reads packets an initiator with the session keys seals
// from records: a flags byte (decoy; a lying length; a flipped bit), a
// 2-byte contents length and the contents. Honest packets before the
// first dishonest one read back as sealed; nothing panics.
func FuzzReadMessage(f *testing.F) {
	f.Add([]byte{0, 5, 0, 22, 1, 2, 3, 4, 1, 0, 0, 0, 1, 0, 18})
	f.Add([]byte{2, 255, 255, 0})
	f.Add([]byte{4, 13, 0, 0, 'v', 'e', 'r', 's', 'i', 'o', 'n', 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		ini, resp := sessionPair(t)
		s := sealer{ini.send}
		var stream []byte
		type want struct {
			command     string
			payload     []byte
			undecodable bool
		}
		var wants []want
		honest := true
		for len(data) >= 3 {
			flags, n := data[0], int(binary.LittleEndian.Uint16(data[1:3]))
			data = data[3:]
			contents := data[:min(n, len(data))]
			data = data[len(contents):]
			declared := len(contents)
			if flags&2 != 0 {
				declared = (declared + int(flags)*4099) % (maxLength + 1)
			}
			header := byte(0)
			if flags&1 != 0 {
				header = ignoreBit
			}
			ct := s.contents(t, append([]byte{header}, contents...))
			if flags&4 != 0 && len(ct) > 0 {
				ct[int(flags)%len(ct)] ^= 0x10
			}
			stream = append(append(stream, s.length(t, declared)...), ct...)
			if declared != len(contents) || flags&4 != 0 {
				honest = false
			}
			if honest && flags&1 == 0 {
				if cmd, payload, ok := DecodeType(contents); ok {
					wants = append(wants, want{cmd, payload, false})
				} else {
					wants = append(wants, want{undecodable: true})
				}
			}
		}
		c := responderConn(resp, bytes.NewReader(stream), Config{MaxPayload: 1 << 16, MaxDecoyBytes: 1 << 20})
		for i := 0; ; i++ {
			m, err := c.ReadMessage()
			if err != nil {
				if i < len(wants) {
					t.Fatalf("message %d: %v", i, err)
				}
				return
			}
			if i < len(wants) {
				w := wants[i]
				if m.Command != w.command || !bytes.Equal(m.Payload, w.payload) || m.Undecodable != w.undecodable {
					t.Fatalf("message %d: %q %x %v, want %q %x %v", i, m.Command, m.Payload, m.Undecodable, w.command, w.payload, w.undecodable)
				}
			}
			m.Release()
		}
	})
}

// FuzzInitiate feeds arbitrary bytes to the initiator's handshake as the
// responder's key, garbage and packets: no input panics or blocks, and
// none completes a handshake without the session keys.
func FuzzInitiate(f *testing.F) {
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0x42}, KeySize+100))
	f.Add(append(bytes.Repeat([]byte{1}, KeySize), bytes.Repeat([]byte{2}, MaxGarbage+TerminatorSize+1)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		rw := struct {
			io.Reader
			io.Writer
		}{bytes.NewReader(data), io.Discard}
		if _, err := Initiate(context.Background(), noDeadlines{rw}, Config{Net: testNet}); err == nil {
			t.Fatal("a handshake completed without the session keys")
		}
	})
}
