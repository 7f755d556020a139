package p2pclient

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"
)

// readerConn is a net.Conn that reads from r and drops what is written.
type readerConn struct {
	net.Conn
	r io.Reader
}

func (c readerConn) Read(b []byte) (int, error)       { return c.r.Read(b) }
func (c readerConn) Write(b []byte) (int, error)      { return len(b), nil }
func (c readerConn) SetDeadline(time.Time) error      { return nil }
func (c readerConn) SetReadDeadline(time.Time) error  { return nil }
func (c readerConn) SetWriteDeadline(time.Time) error { return nil }

func readerOf(data []byte, opts ConnOptions) *Conn {
	return NewConn(readerConn{r: bytes.NewReader(data)}, wire.SimNet, opts)
}

// rawFrame builds a frame by hand; sum overrides the checksum when set.
func rawFrame(magic wire.BitcoinNet, cmd string, declared uint32, payload, sum []byte) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.LittleEndian, uint32(magic))
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

// ReadFrame refuses frames for another network, with a bad checksum, or
// declaring more than the command's cap (before reading the payload), and
// skips commands it is not asked to keep without reading them; blocks
// skip the checksum only when asked to.
func TestConnReadFrameLimits(t *testing.T) {
	blk := make([]byte, 80)
	tests := []struct {
		name    string
		data    []byte
		opts    ConnOptions
		keep    []string
		wantCmd string
		wantLen int
		wantErr error
	}{
		{"pong kept", rawFrame(wire.SimNet, "pong", 8, make([]byte, 8), nil), ConnOptions{}, nil, "pong", 8, nil},
		{"inv skipped", rawFrame(wire.SimNet, "inv", 3, []byte{1, 2, 3}, []byte{0, 0, 0, 0}), ConnOptions{}, []string{"block"}, "inv", 0, nil},
		{"wrong network", rawFrame(wire.MainNet, "pong", 8, make([]byte, 8), nil), ConnOptions{}, nil, "", 0, ErrProtocol},
		{"bad checksum", rawFrame(wire.SimNet, "pong", 8, make([]byte, 8), []byte{1, 2, 3, 4}), ConnOptions{}, nil, "", 0, ErrProtocol},
		{"block bad checksum", rawFrame(wire.SimNet, "block", 80, blk, []byte{1, 2, 3, 4}), ConnOptions{}, nil, "", 0, ErrProtocol},
		{"block checksum left to the caller", rawFrame(wire.SimNet, "block", 80, blk, []byte{1, 2, 3, 4}), ConnOptions{NoBlockChecksum: true}, nil, "block", 80, nil},
		{"block over cap", rawFrame(wire.SimNet, "block", wire.MaxBlockPayload+1, nil, []byte{0, 0, 0, 0}), ConnOptions{}, []string{"block"}, "", 0, ErrProtocol},
		{"notfound over cap", rawFrame(wire.SimNet, "notfound", maxUnknownPayload+1, nil, []byte{0, 0, 0, 0}), ConnOptions{}, []string{"block"}, "", 0, ErrProtocol},
		{"skipped over cap", rawFrame(wire.SimNet, "inv", wire.MaxMessagePayload+1, nil, []byte{0, 0, 0, 0}), ConnOptions{}, []string{"block"}, "", 0, ErrProtocol},
		{"malformed command", rawFrame(wire.SimNet, "p\x01ng", 0, nil, nil), ConnOptions{}, nil, "", 0, ErrProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := readerOf(tt.data, tt.opts).ReadFrame(tt.keep...)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || f.Command != tt.wantCmd || len(f.Payload) != tt.wantLen {
				t.Fatalf("got %q, %d bytes, %v", f.Command, len(f.Payload), err)
			}
		})
	}
}

// FuzzConnReadFrame: any byte stream gives frames or an error, never a
// panic or a payload beyond the caps, through every way of reading.
func FuzzConnReadFrame(f *testing.F) {
	f.Add(rawFrame(wire.SimNet, "ping", 8, make([]byte, 8), nil))
	f.Add(rawFrame(wire.SimNet, "block", 80, make([]byte, 80), nil))
	f.Add(rawFrame(wire.SimNet, "notfound", 1, []byte{0}, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := readerOf(data, ConnOptions{NoBlockChecksum: true, ReadBuffer: 64})
		for range 4 {
			fr, err := c.ReadFrame(wire.CmdBlock)
			if err != nil {
				break
			}
			if uint32(len(fr.Payload)) > MaxPayload(fr.Command) {
				t.Fatalf("%s payload of %d bytes", fr.Command, len(fr.Payload))
			}
		}
		c = readerOf(data, ConnOptions{ReadBuffer: 64})
		for range 4 {
			fr, err := c.ReadRaw(1000)
			if err != nil {
				break
			}
			if len(fr.Payload) > 1000 || len(fr.Header) != headerSize {
				t.Fatalf("raw frame of %d bytes", len(fr.Payload))
			}
		}
		c = readerOf(data, ConnOptions{ReadBuffer: 64})
		for range 4 {
			if _, _, err := c.Skip(); err != nil {
				break
			}
		}
	})
}
