package transport

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/v2"

	"github.com/cfindexd/cfindexd/wireframe"
)

// frameOf is a v1 frame of cmd carrying payload.
func frameOf(cmd string, payload []byte) []byte {
	b := make([]byte, wireframe.HeaderSize, wireframe.HeaderSize+len(payload))
	wireframe.PutHeader(b, chaincfg.RegressionNetParams.Net, cmd, len(payload), wireframe.PayloadChecksum(payload))
	return append(b, payload...)
}

// TestEachFrameSplitsEntries: every shape of send-queue entry gives its
// messages' commands and payloads, whole, in order; malformed entries are
// refused.
func TestEachFrameSplitsEntries(t *testing.T) {
	a, b := bytes.Repeat([]byte{1}, 10), bytes.Repeat([]byte{2}, 300)
	fa, fb := frameOf("cfilter", a), frameOf("block", b)
	for _, tc := range []struct {
		name           string
		frame, payload []byte
		want           []string
		err            error
	}{
		{"one frame", fa, nil, []string{"cfilter:10"}, nil},
		{"frames back to back", append(append([]byte{}, fa...), fa...), nil, []string{"cfilter:10", "cfilter:10"}, nil},
		{"header apart from its payload", fb[:wireframe.HeaderSize], b, []string{"block:300"}, nil},
		{"payload split across both", fb[:wireframe.HeaderSize+7], b[7:], []string{"block:300"}, nil},
		{"empty payload", frameOf("verack", nil), nil, []string{"verack:0"}, nil},
		{"short header", fa[:10], nil, nil, errBadEntry},
		{"payload shorter than declared", fb[:wireframe.HeaderSize+5], nil, nil, errBadEntry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			var joined []byte
			err := eachFrame(tc.frame, tc.payload, func(cmd, first, second []byte) error {
				n := 0
				for _, p := range [][]byte{first, second} {
					n += len(p)
					joined = append(joined, p...)
				}
				got = append(got, fmt.Sprintf("%s:%d", cmd, n))
				return nil
			})
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if tc.err == nil && fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("messages %v, want %v", got, tc.want)
			}
			if tc.name == "payload split across both" && !bytes.Equal(joined, b) {
				t.Fatal("pieces do not join to the payload")
			}
		})
	}
}
