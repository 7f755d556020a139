package attackwire

import (
	"bytes"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Every payload names a command wire knows, and every frame reads back
// through wire's header check (magic, length, checksum) up to the payload
// decode, which must fail: each declares more than it carries.
func TestHugeCountFrames(t *testing.T) {
	params := &chaincfg.RegressionNetParams
	for name, payload := range HugeCountPayloads() {
		frame := Frame(params.Net, CommandOf(name), payload)
		_, msg, raw, err := wire.ReadMessageWithEncodingN(bytes.NewReader(frame), wire.ProtocolVersion, params.Net, wire.WitnessEncoding)
		if err == nil {
			t.Errorf("%s: decoded as %T, want an error", name, msg)
			continue
		}
		if me, ok := err.(*wire.MessageError); ok && bytes.Contains([]byte(me.Description), []byte("checksum")) {
			t.Errorf("%s: %v", name, err)
		}
		_ = raw
	}
}
