package wireframe

import (
	"bytes"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestCFilterChecksumMatchesWire pins CFilterChecksum and PutCFilterPrefix
// to wire's encoding of a cfilter message, for filter lengths on both sides
// of each CompactSize boundary.
func TestCFilterChecksumMatchesWire(t *testing.T) {
	hash := chainhash.DoubleHashH([]byte("block"))
	for _, n := range []int{1, 0xfc, 0xfd, 0xfe, 0xffff, 0x10000, 100_000} {
		filter := bytes.Repeat([]byte{byte(n), 0x5a, 0xc3}, n/3+1)[:n]
		msg := wire.NewMsgCFilter(wire.GCSFilterRegular, &hash, filter)
		var frame bytes.Buffer
		if err := wire.WriteMessage(&frame, msg, wire.ProtocolVersion, wire.MainNet); err != nil {
			t.Fatal(err)
		}
		raw := frame.Bytes()
		payload := raw[wire.MessageHeaderSize:]
		if got := CFilterChecksum(&hash, filter); !bytes.Equal(got[:], raw[20:24]) {
			t.Fatalf("filter of %d bytes: checksum %x, wire %x", n, got, raw[20:24])
		}
		prefix := make([]byte, CFilterPrefixLen(n))
		if m := PutCFilterPrefix(prefix, &hash, n); m != len(prefix) || !bytes.Equal(append(prefix, filter...), payload) {
			t.Fatalf("filter of %d bytes: prefix %x (%d bytes) + filter is not wire's payload", n, prefix, m)
		}
	}
}
