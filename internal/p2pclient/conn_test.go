package p2pclient

import (
	"bytes"
	"errors"
	"net"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// frameBytes encodes msg as a regtest frame.
func frameBytes(t *testing.T, magic wire.BitcoinNet, msg wire.Message) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := wire.WriteMessageWithEncodingN(&b, msg, wire.ProtocolVersion, magic, wire.WitnessEncoding); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pipe returns a Conn with a small read buffer whose peer writes in and
// collects what the Conn writes (pongs) into out.
func pipe(t *testing.T, in []byte) (*Conn, <-chan []byte) {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	out := make(chan []byte, 1)
	go func() { _, _ = b.Write(in) }()
	go func() {
		buf := make([]byte, 32)
		n, _ := b.Read(buf)
		out <- buf[:n]
	}()
	return NewConn(a, wire.TestNet, ConnOptions{ReadBuffer: 64}), out
}

// ReadRaw reads small frames in place and large ones into its own buffer,
// answers pings, and refuses a frame over the limit before reading it.
func TestConnReadRaw(t *testing.T) {
	big := wire.NewMsgCFilter(wire.GCSFilterRegular, &chainhash.Hash{1}, bytes.Repeat([]byte{7}, 100))
	in := slicesConcat(
		frameBytes(t, wire.TestNet, wire.NewMsgPing(42)),
		frameBytes(t, wire.TestNet, wire.NewMsgVerAck()),
		frameBytes(t, wire.TestNet, big),
		frameBytes(t, wire.TestNet, big),
	)
	c, out := pipe(t, in)
	f, err := c.ReadRaw(1000)
	if err != nil || !f.Header.Is(wire.CmdVerAck) || f.Size() != headerSize {
		t.Fatalf("first frame %q, %v", f.Header.Command(), err)
	}
	if pong := <-out; !bytes.Equal(pong, frameBytes(t, wire.TestNet, wire.NewMsgPong(42))) {
		t.Fatalf("pong %x", pong)
	}
	f, err = c.ReadRaw(1000)
	if want := frameBytes(t, wire.TestNet, big); err != nil || !bytes.Equal(append(append([]byte{}, f.Header...), f.Payload...), want) {
		t.Fatalf("large frame: %v", err)
	}
	if _, err := c.ReadRaw(50); !errors.Is(err, ErrProtocol) {
		t.Fatalf("frame over the limit: %v", err)
	}
}

// Skip returns commands without payloads; ReadFrame keeps what it is
// asked for and skips the rest; a frame of another network is a
// *WrongMagicError.
func TestConnSkipAndReadFrame(t *testing.T) {
	in := slicesConcat(
		frameBytes(t, wire.TestNet, wire.NewMsgFeeFilter(5)),
		frameBytes(t, wire.TestNet, wire.NewMsgSendHeaders()),
		frameBytes(t, wire.TestNet, wire.NewMsgFeeFilter(6)),
		frameBytes(t, wire.MainNet, wire.NewMsgVerAck()),
	)
	c, _ := pipe(t, in)
	if cmd, n, err := c.Skip(); err != nil || cmd != wire.CmdFeeFilter || n != 8 {
		t.Fatalf("skip: %q %d %v", cmd, n, err)
	}
	if f, err := c.ReadFrame(wire.CmdFeeFilter); err != nil || f.Command != wire.CmdSendHeaders || f.Payload != nil {
		t.Fatalf("skipped frame: %+v %v", f, err)
	}
	if f, err := c.ReadFrame(wire.CmdFeeFilter); err != nil || f.Command != wire.CmdFeeFilter || len(f.Payload) != 8 {
		t.Fatalf("kept frame: %+v %v", f, err)
	}
	var wm *WrongMagicError
	if _, err := c.ReadFrame(); !errors.As(err, &wm) || wm.Got != wire.MainNet || !errors.Is(err, ErrProtocol) {
		t.Fatalf("wrong magic: %v", err)
	}
}

func slicesConcat(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
