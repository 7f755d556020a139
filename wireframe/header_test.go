package wireframe

import (
	"bytes"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"
)

// TestHeaderMatchesWire pins PutHeader, PayloadChecksum and DecodeHeader to
// wire's encoding of a message.
func TestHeaderMatchesWire(t *testing.T) {
	msg := wire.NewMsgPing(0x0102030405060708)
	var frame bytes.Buffer
	if err := wire.WriteMessage(&frame, msg, wire.ProtocolVersion, wire.TestNet); err != nil {
		t.Fatal(err)
	}
	raw := frame.Bytes()
	payload := raw[HeaderSize:]
	var hdr [HeaderSize]byte
	PutHeader(hdr[:], wire.TestNet, wire.CmdPing, len(payload), PayloadChecksum(payload))
	if !bytes.Equal(hdr[:], raw[:HeaderSize]) {
		t.Fatalf("header %x, wire %x", hdr, raw[:HeaderSize])
	}
	h, cmd, ok := DecodeHeader(&hdr)
	if !ok || string(cmd) != wire.CmdPing || h.Magic != wire.TestNet || h.Length != uint32(len(payload)) || h.Checksum != PayloadChecksum(payload) {
		t.Fatalf("decoded %+v %q %v", h, cmd, ok)
	}
	if field := CommandField(&hdr); string(field[:]) != "ping\x00\x00\x00\x00\x00\x00\x00\x00" {
		t.Fatalf("command field %q", field)
	}
	if n := PayloadLength(&hdr); n != 8 {
		t.Fatalf("payload length %d, want 8", n)
	}
}

func TestDecodeHeaderMalformedCommand(t *testing.T) {
	for _, cmd := range []string{"ping\x00x", "pi\x01ng", "\x7f"} {
		var hdr [HeaderSize]byte
		copy(hdr[4:16], cmd)
		if _, _, ok := DecodeHeader(&hdr); ok {
			t.Errorf("command %q accepted", cmd)
		}
	}
	var full [HeaderSize]byte
	copy(full[4:16], "abcdefghijkl")
	if _, cmd, ok := DecodeHeader(&full); !ok || string(cmd) != "abcdefghijkl" {
		t.Errorf("12-byte command: %q %v", cmd, ok)
	}
}
