package load

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/headers"
)

// The expected answers accept exactly wire's encoding of each answer: a
// cfilter frame or a cfheaders answer with any one byte changed (its
// checksum included) is refused. Over v2 (no checksum in the made-up
// header) every byte but the checksum's is still checked.
func TestExpectedAnswersCatchEveryByte(t *testing.T) {
	const n = 40
	rng := rand.New(rand.NewPCG(5, 6))
	hashes := make([]chainhash.Hash, n)
	filters := make([][]byte, n)
	var tipHeader chainhash.Hash
	for h := range hashes {
		hashes[h] = chainhash.Hash{byte(h), byte(rng.Uint32())}
		filters[h] = make([]byte, 1+rng.IntN(300))
		for i := range filters[h] {
			filters[h][i] = byte(rng.Uint32())
		}
		tipHeader = headers.FilterHeader(filters[h], tipHeader)
	}
	if _, err := NewExpected(wire.SimNet, hashes, filters, chainhash.Hash{1}); err == nil {
		t.Fatal("a wrong tip filter header was accepted")
	}
	exp, err := NewExpected(wire.SimNet, hashes, filters, tipHeader)
	if err != nil {
		t.Fatal(err)
	}
	encode := func(msg wire.Message) (hdr, payload []byte) {
		var buf bytes.Buffer
		if err := wire.WriteMessage(&buf, msg, wire.ProtocolVersion, wire.SimNet); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		return b[:wire.MessageHeaderSize], b[wire.MessageHeaderSize:]
	}
	flipEach := func(what string, hdr, payload []byte, check func(hdr, payload []byte) error) {
		t.Helper()
		if err := check(hdr, payload); err != nil {
			t.Fatalf("%s: the right answer is refused: %v", what, err)
		}
		for _, part := range [][]byte{hdr, payload} {
			for i := range part {
				part[i] ^= 0x40
				if check(hdr, payload) == nil {
					t.Fatalf("%s: a change of byte %d of %d is not seen", what, i, len(part))
				}
				part[i] ^= 0x40
			}
		}
	}
	for _, h := range []uint32{0, 17, n - 1} {
		hdr, payload := encode(wire.NewMsgCFilter(wire.GCSFilterRegular, &hashes[h], filters[h]))
		flipEach(fmt.Sprintf("cfilter %d", h), hdr, payload, func(hdr, payload []byte) error { return exp.checkCFilter(h, hdr, payload, true) })
		v2hdr := append(bytes.Clone(hdr[:checksumAt]), 0, 0, 0, 0)
		if exp.checkCFilter(h, v2hdr, payload, true) == nil {
			t.Fatalf("cfilter %d: a zero checksum is accepted over v1", h)
		}
		flipEach(fmt.Sprintf("cfilter %d over v2", h), v2hdr[:checksumAt], payload, func(hdr, payload []byte) error {
			return exp.checkCFilter(h, append(bytes.Clone(hdr), 0, 0, 0, 0), payload, false)
		})
	}
	var prev chainhash.Hash
	for _, r := range [][2]uint32{{0, n - 1}, {10, 30}} {
		msg := wire.NewMsgCFHeaders()
		msg.StopHash = hashes[r[1]]
		if r[0] > 0 {
			prev = exp.FilterHeaders[r[0]-1]
		}
		msg.PrevFilterHeader = prev
		for h := r[0]; h <= r[1]; h++ {
			fh := headers.FilterHash(filters[h])
			msg.FilterHashes = append(msg.FilterHashes, &fh)
		}
		hdr, payload := encode(msg)
		flipEach(fmt.Sprintf("cfheaders %d..%d", r[0], r[1]), hdr[20:24], payload, func(sum, payload []byte) error {
			full := append(append([]byte{}, hdr[:20]...), sum...)
			return exp.checkCFHeaders(r[0], r[1], full, payload, true)
		})
		// The connection checked the magic, the caller the command, and
		// the length is the payload's: over v2 the payload is what is left.
		flipEach(fmt.Sprintf("cfheaders %d..%d over v2", r[0], r[1]), nil, payload, func(_, payload []byte) error {
			return exp.checkCFHeaders(r[0], r[1], append(bytes.Clone(hdr[:checksumAt]), 0, 0, 0, 0), payload, false)
		})
	}
}
