package nodep2p

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// frame builds a P2P message frame; sum overrides the checksum when set.
func frame(btcnet wire.BitcoinNet, cmd string, declared uint32, payload []byte, sum []byte) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.LittleEndian, uint32(btcnet))
	var c [wire.CommandSize]byte
	copy(c[:], cmd)
	b.Write(c[:])
	_ = binary.Write(&b, binary.LittleEndian, declared)
	if sum == nil {
		first := sha256.Sum256(payload)
		second := sha256.Sum256(first[:])
		sum = second[:4]
	}
	b.Write(sum)
	b.Write(payload)
	return b.Bytes()
}

func frameConn(data []byte) *p2pConn {
	return &p2pConn{r: bufio.NewReader(bytes.NewReader(data)), net: wire.SimNet}
}

// readFrame rejects frames for another network, with a bad checksum, or
// declaring more than the command's cap (before reading the payload), and
// skips commands it does not use without buffering them.
func TestReadFrameLimits(t *testing.T) {
	ping := make([]byte, 8)
	tests := []struct {
		name    string
		data    []byte
		keep    []string
		wantCmd string
		wantLen int
		wantErr error
	}{
		{"ping kept", frame(wire.SimNet, "ping", 8, ping, nil), nil, "ping", 8, nil},
		{"inv skipped", frame(wire.SimNet, "inv", 3, []byte{1, 2, 3}, []byte{0, 0, 0, 0}), nil, "inv", 0, nil},
		{"wrong network", frame(wire.MainNet, "ping", 8, ping, nil), nil, "", 0, ErrMalformed},
		{"bad checksum", frame(wire.SimNet, "ping", 8, ping, []byte{1, 2, 3, 4}), nil, "", 0, ErrMalformed},
		{"block over cap", frame(wire.SimNet, "block", wire.MaxBlockPayload+1, nil, []byte{0, 0, 0, 0}), []string{"block"}, "", 0, ErrMalformed},
		{"small message over cap", frame(wire.SimNet, "notfound", p2pMaxSmallPayload+1, nil, []byte{0, 0, 0, 0}), nil, "", 0, ErrMalformed},
		{"skipped message over cap", frame(wire.SimNet, "inv", wire.MaxMessagePayload+1, nil, []byte{0, 0, 0, 0}), nil, "", 0, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, payload, err := frameConn(tt.data).readFrame(tt.keep...)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || cmd != tt.wantCmd || len(payload) != tt.wantLen {
				t.Fatalf("got %q, %d bytes, %v", cmd, len(payload), err)
			}
		})
	}
}

// FuzzReadFrame: any byte stream gives frames or an error, never a panic
// or an allocation beyond the caps.
func FuzzReadFrame(f *testing.F) {
	f.Add(frame(wire.SimNet, "ping", 8, make([]byte, 8), nil))
	f.Add(frame(wire.SimNet, "block", 80, make([]byte, 80), nil))
	f.Add(frame(wire.SimNet, "notfound", 1, []byte{0}, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := frameConn(data)
		for range 4 {
			cmd, payload, err := c.readFrame(wire.CmdBlock)
			if err != nil {
				return
			}
			if cmd == wire.CmdBlock && len(payload) > wire.MaxBlockPayload {
				t.Fatalf("block payload of %d bytes", len(payload))
			}
			if cmd == wire.CmdBlock {
				_, _ = wirescan.ScanBlock(payload, [32]byte{})
			}
		}
	})
}
