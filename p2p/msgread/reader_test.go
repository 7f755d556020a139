package msgread

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"golang.org/x/sync/semaphore"

	"github.com/cfindexd/cfindexd/internal/testtx"
	"github.com/cfindexd/cfindexd/wireframe"
)

// newTestFrameReader reads frames from r without deadlines.
func newTestFrameReader(r io.Reader, recv *semaphore.Weighted) *Reader {
	return &Reader{
		R:    bufio.NewReaderSize(r, 16<<10),
		Net:  chaincfg.RegressionNetParams.Net,
		Recv: recv,
		Now:  time.Now,
	}
}

// rawFrame is a frame of cmd carrying payload with a correct checksum.
func rawFrame(cmd string, payload []byte) []byte {
	b := rawHeader(chaincfg.RegressionNetParams.Net, cmd, uint32(len(payload)))
	sum := wireframe.PayloadChecksum(payload)
	copy(b[20:24], sum[:])
	return append(b, payload...)
}

// afterVerack and friends are the reader states of a connection.
var (
	beforeVerack = State{PVer: wire.ProtocolVersion, Handshaking: true, Relay: true}
	relayOff     = State{PVer: wire.ProtocolVersion}
	relayOn      = State{PVer: wire.ProtocolVersion, Relay: true}
	bloomOn      = State{PVer: wire.ProtocolVersion, Relay: true, Bloom: true}
)

func TestDecodePayload(t *testing.T) {
	me := wire.NewNetAddressIPPort(nil, 0, 0)
	version := payloadOf(wire.NewMsgVersion(me, me, 1, 2))
	getcf := payloadOf(wire.NewMsgGetCFilters(0, 1, &chainhash.Hash{}))
	gh := wire.NewMsgGetHeaders()
	_ = gh.AddBlockLocatorHash(&chainhash.Hash{1})
	getheaders := payloadOf(gh)
	tx := payloadOf(testtx.Witness(1))
	tests := []struct {
		name    string
		cmd     string
		payload []byte
		wantErr error
	}{
		{"version", wire.CmdVersion, version, nil},
		{"version with a future extension", wire.CmdVersion, append(bytes.Clone(version), 1, 2, 3), nil},
		{"truncated version", wire.CmdVersion, version[:20], ErrMisbehaving},
		{"version claiming a 32 MB user agent", wire.CmdVersion, append(bytes.Clone(version[:80]), 0xfe, 0, 0, 0, 2), ErrMisbehaving},
		{"getcfilters", wire.CmdGetCFilters, getcf, nil},
		{"getcfilters with trailing byte", wire.CmdGetCFilters, append(bytes.Clone(getcf), 0), ErrMisbehaving},
		{"truncated getcfilters", wire.CmdGetCFilters, getcf[:36], ErrMisbehaving},
		{"getheaders", wire.CmdGetHeaders, getheaders, nil},
		{"getheaders claiming 500 locators", wire.CmdGetHeaders, append([]byte{1, 0, 0, 0, 0xfd, 0xf4, 0x01}, make([]byte, 64)...), ErrMisbehaving},
		{"inv claiming 50,001 entries", wire.CmdInv, []byte{0xfe, 0x51, 0xc3, 0x00, 0x00}, ErrMisbehaving},
		{"inv claiming 50,000 entries in 5 bytes", wire.CmdInv, []byte{0xfe, 0x50, 0xc3, 0x00, 0x00}, ErrMisbehaving},
		{"getdata with a non-canonical count", wire.CmdGetData, append([]byte{0xfd, 1, 0}, make([]byte, 36)...), ErrMisbehaving},
		{"tx", wire.CmdTx, tx, nil},
		{"tx with trailing byte", wire.CmdTx, append(bytes.Clone(tx), 0), ErrMisbehaving},
		{"tx claiming 3.7 million outputs", wire.CmdTx, []byte{1, 0, 0, 0, 0, 0xfe, 0x40, 0x75, 0x38, 0x00}, ErrMisbehaving},
		{"not decoded here", wire.CmdBlock, nil, errors.ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodePayload(tc.cmd, tc.payload, wire.ProtocolVersion)
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestReadFrameCapsBeforeReadingPayload(t *testing.T) {
	regtest := chaincfg.RegressionNetParams.Net
	for cmd, rule := range commandRules {
		// A header one byte over the cap, and no payload: an error at once
		// (a reader that tried to read the payload would hit EOF instead).
		fr := newTestFrameReader(bytes.NewReader(rawHeader(regtest, cmd, rule.maxPayload+1)), nil)
		if _, err := fr.Next(relayOn); !errors.Is(err, ErrMisbehaving) {
			t.Errorf("%s over cap: %v", cmd, err)
		}
	}
}

// What the reader decodes and what it discards unbuffered, by connection
// state: only handshake messages before verack; tx, inv and notfound only
// with relay on; BIP-37 messages end the connection after verack.
func TestReadFrameByState(t *testing.T) {
	errNotServed := &NotServedError{Command: wire.CmdFilterLoad}
	tx := rawFrame(wire.CmdTx, payloadOf(testtx.Witness(1)))
	inv := rawFrame(wire.CmdInv, payloadOf(wire.NewMsgInv()))
	ping := rawFrame(wire.CmdPing, payloadOf(wire.NewMsgPing(7)))
	verack := rawFrame(wire.CmdVerAck, nil)
	filterload := rawFrame(wire.CmdFilterLoad, payloadOf(wire.NewMsgFilterLoad([]byte{1}, 1, 0, 0)))
	headers := rawFrame(wire.CmdHeaders, []byte{0xfe, 0xff, 0xff, 0xff, 0x00})
	tests := []struct {
		name    string
		frame   []byte
		st      State
		decoded bool
		err     error
	}{
		{"tx before verack", tx, beforeVerack, false, nil},
		{"ping before verack", ping, beforeVerack, false, nil},
		{"verack before verack", verack, beforeVerack, true, nil},
		{"filterload before verack", filterload, beforeVerack, false, nil},
		{"tx with relay off", tx, relayOff, false, nil},
		{"inv with relay off", inv, relayOff, false, nil},
		{"tx with relay on", tx, relayOn, true, nil},
		{"inv with relay on", inv, relayOn, true, nil},
		{"ping after verack", ping, relayOff, true, nil},
		{"headers claiming 4 billion entries", headers, relayOn, false, nil},
		{"filterload after verack", filterload, relayOff, false, errNotServed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Each frame is followed by a ping, which must be read next:
			// a discarded payload was consumed exactly.
			fr := newTestFrameReader(bytes.NewReader(append(bytes.Clone(tc.frame), ping...)), nil)
			f, err := fr.Next(tc.st)
			if tc.err != nil {
				var ns *NotServedError
				if !errors.Is(err, tc.err) && !(errors.As(err, &ns) && tc.err == errNotServed && ns.Command == errNotServed.Command) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (f.Msg != nil) != tc.decoded {
				t.Fatalf("decoded %v, want %v", f.Msg != nil, tc.decoded)
			}
			next, err := fr.Next(relayOff)
			if _, ok := next.Msg.(*wire.MsgPing); err != nil || !ok {
				t.Fatalf("frame after: %v %v", next.Command, err)
			}
		})
	}
}

// A large frame that would be decoded takes its bytes from the receive
// budget until released, and is discarded (not buffered) when the budget
// cannot hold it.
func TestLargeFrameUsesReceiveBudget(t *testing.T) {
	big := testtx.Witness(1)
	big.TxIn[0].Witness = wire.TxWitness{make([]byte, 100_000)}
	frame := rawFrame(wire.CmdTx, payloadOf(big))
	budget := semaphore.NewWeighted(150_000)

	fr := newTestFrameReader(bytes.NewReader(append(bytes.Clone(frame), frame...)), budget)
	first, err := fr.Next(relayOn)
	if err != nil || first.Msg == nil {
		t.Fatalf("first large tx: %v", err)
	}
	second, err := fr.Next(relayOn)
	if err != nil || second.Msg != nil || !second.Dropped {
		t.Fatalf("second large tx while the first holds the budget: msg %v dropped %v err %v", second.Msg != nil, second.Dropped, err)
	}
	first.Release()
	if !budget.TryAcquire(150_000) {
		t.Fatal("budget not returned")
	}
}

// A large frame's sender must keep up Config.MinRecvRate: a deadline that
// grows with the bytes received, not the idle timeout.
func TestLargeFrameMinimumRate(t *testing.T) {
	var deadlines []time.Time
	start := time.Unix(1_700_000_000, 0)
	payload := make([]byte, 3*payloadChunk)
	fr := newTestFrameReader(bytes.NewReader(rawFrame("xyzzy", payload)), nil)
	fr.MinRate = payloadChunk // one chunk per second
	fr.Now = func() time.Time { return start }
	fr.SetDeadline = func(t time.Time) error { deadlines = append(deadlines, t); return nil }
	idle := start.Add(time.Hour)
	st := relayOn
	st.Deadline = idle
	if _, err := fr.Next(st); err != nil {
		t.Fatal(err)
	}
	want := []time.Time{
		idle, // the header, under the caller's deadline
		start.Add(LargeFrameGrace + time.Second),
		start.Add(LargeFrameGrace + 2*time.Second),
		start.Add(LargeFrameGrace + 3*time.Second),
	}
	if len(deadlines) != len(want) {
		t.Fatalf("deadlines %v, want %v", deadlines, want)
	}
	for i := range want {
		if !deadlines[i].Equal(want[i]) {
			t.Fatalf("deadline %d is %v, want %v", i, deadlines[i], want[i])
		}
	}
	// The rate never extends the caller's deadline (the handshake's).
	deadlines = nil
	fr = newTestFrameReader(bytes.NewReader(rawFrame("xyzzy", payload)), nil)
	fr.MinRate, fr.Now = payloadChunk, func() time.Time { return start }
	fr.SetDeadline = func(t time.Time) error { deadlines = append(deadlines, t); return nil }
	st.Deadline = start.Add(LargeFrameGrace + 1500*time.Millisecond)
	if _, err := fr.Next(st); err != nil {
		t.Fatal(err)
	}
	if last := deadlines[len(deadlines)-1]; !last.Equal(st.Deadline) {
		t.Fatalf("last chunk's deadline %v, beyond the caller's %v", last, st.Deadline)
	}
	// A small frame keeps the caller's deadline.
	deadlines = nil
	fr = newTestFrameReader(bytes.NewReader(rawFrame(wire.CmdPing, make([]byte, 8))), nil)
	fr.SetDeadline = func(t time.Time) error { deadlines = append(deadlines, t); return nil }
	fr.MinRate = 1
	if _, err := fr.Next(st); err != nil || len(deadlines) != 1 || !deadlines[0].Equal(st.Deadline) {
		t.Fatalf("small frame: deadlines %v, err %v", deadlines, err)
	}
}

// Frame.Size counts the bytes read off the wire: a whole frame, a header
// refused before its payload, and a payload the peer stopped sending
// (decoded or discarded) count what arrived, not what the header declared.
func TestFrameSizeCountsBytesRead(t *testing.T) {
	regtest := chaincfg.RegressionNetParams.Net
	ping := rawFrame(wire.CmdPing, payloadOf(wire.NewMsgPing(7)))
	tx := rawFrame(wire.CmdTx, payloadOf(testtx.Witness(1)))
	tests := []struct {
		name    string
		wire    []byte
		st      State
		size    int
		wantErr bool
	}{
		{"whole ping", ping, relayOff, len(ping), false},
		{"whole tx, discarded", tx, relayOff, len(tx), false},
		{"tx cut short, decoded", tx[:wireframe.HeaderSize+40], relayOn, wireframe.HeaderSize + 40, true},
		{"tx cut short, discarded", tx[:wireframe.HeaderSize+40], relayOff, wireframe.HeaderSize + 40, true},
		{"4 MB declared, 100 bytes sent", append(rawHeader(regtest, wire.CmdTx, 4_000_000), make([]byte, 100)...), relayOff, wireframe.HeaderSize + 100, true},
		{"header over its cap", rawHeader(regtest, wire.CmdPing, 1<<20), relayOff, wireframe.HeaderSize, true},
		{"wrong magic", rawHeader(wire.MainNet, wire.CmdPing, 8), relayOff, wireframe.HeaderSize, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fr := newTestFrameReader(bytes.NewReader(tc.wire), nil)
			f, err := fr.Next(tc.st)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want an error: %v", err, tc.wantErr)
			}
			if f.Size != tc.size {
				t.Fatalf("Size %d, want %d (%d bytes sent)", f.Size, tc.size, len(tc.wire))
			}
		})
	}
}
