package msgread

import (
	"bytes"
	"errors"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/attackwire"
	"github.com/cfindexd/cfindexd/internal/testtx"
)

// sameAsFrame checks that FromPayload treats command and payload as Next
// treats the v1 frame carrying them: the same message (or none) and the
// same kind of error.
func sameAsFrame(t *testing.T, command string, payload []byte, st State) {
	t.Helper()
	fr := newTestFrameReader(bytes.NewReader(rawFrame(command, payload)), nil)
	want, wantErr := fr.Next(st)
	want.Release()
	got, gotErr := FromPayload(command, payload, 7, st)
	got.Release()
	if kind(gotErr) != kind(wantErr) {
		t.Fatalf("%s (%d bytes): error %v, v1 frame gives %v", command, len(payload), gotErr, wantErr)
	}
	if got.Size != 7 || got.Command != command {
		t.Fatalf("%s: frame %q of %d bytes, want %q of 7", command, got.Command, got.Size, command)
	}
	if gotErr == nil && !reflect.DeepEqual(got.Msg, want.Msg) {
		t.Fatalf("%s: message %#v, v1 frame gives %#v", command, got.Msg, want.Msg)
	}
}

// kind classifies a reader error: none, misbehaviour, not served, other.
func kind(err error) string {
	var ns *NotServedError
	switch {
	case err == nil:
		return "none"
	case errors.Is(err, ErrMisbehaving):
		return "misbehaving"
	case errors.As(err, &ns):
		return "not served"
	}
	return "other"
}

func TestFromPayloadTreatsMessagesAsFrames(t *testing.T) {
	hash := chainhash.Hash{1}
	states := []struct {
		name string
		st   State
	}{{"before verack", beforeVerack}, {"relay off", relayOff}, {"relay on", relayOn}, {"bloom on", bloomOn}}
	for _, tc := range []struct {
		name    string
		command string
		payload []byte
	}{
		{"version", wire.CmdVersion, payloadOf(wire.NewMsgVersion(wire.NewNetAddressIPPort(nil, 0, 0), wire.NewNetAddressIPPort(nil, 0, 0), 1, 0))},
		{"verack", wire.CmdVerAck, nil},
		{"getcfilters", wire.CmdGetCFilters, payloadOf(wire.NewMsgGetCFilters(0, 1, &hash))},
		{"getcfheaders", wire.CmdGetCFHeaders, payloadOf(wire.NewMsgGetCFHeaders(0, 1, &hash))},
		{"getcfcheckpt", wire.CmdGetCFCheckpt, payloadOf(wire.NewMsgGetCFCheckpt(0, &hash))},
		{"getcfilters truncated", wire.CmdGetCFilters, []byte{0, 1}},
		{"getcfilters over its cap", wire.CmdGetCFilters, make([]byte, 1+4+32+1)},
		{"ping", wire.CmdPing, payloadOf(wire.NewMsgPing(9))},
		{"tx", wire.CmdTx, payloadOf(testtx.Witness(2))},
		{"filterload", wire.CmdFilterLoad, payloadOf(wire.NewMsgFilterLoad(make([]byte, 10), 3, 0, 0))},
		{"filterload over BIP-37's cap", wire.CmdFilterLoad, make([]byte, maxFilterLoadPayload+1)},
		{"mempool", wire.CmdMemPool, nil},
		{"verack with a payload", wire.CmdVerAck, []byte{0}},
		{"unknown command", "cfindexdzz", make([]byte, 100)},
		{"headers, never read", wire.CmdHeaders, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	} {
		for _, s := range states {
			t.Run(tc.name+"/"+s.name, func(t *testing.T) { sameAsFrame(t, tc.command, tc.payload, s.st) })
		}
	}
	for name, payload := range attackwire.HugeCountPayloads() {
		for _, s := range states {
			t.Run(name+"/"+s.name, func(t *testing.T) { sameAsFrame(t, attackwire.CommandOf(name), payload, s.st) })
		}
	}
}

// TestFromPayloadHugeDeclaredCountsCostTheirPayload: a v2 message whose
// payload declares huge counts costs what the v1 frame does, a small
// multiple of its payload.
func TestFromPayloadHugeDeclaredCountsCostTheirPayload(t *testing.T) {
	for name, payload := range attackwire.HugeCountPayloads() {
		cmd := attackwire.CommandOf(name)
		t.Run(name, func(t *testing.T) {
			read := func() { f, _ := FromPayload(cmd, payload, len(payload), bloomOn); f.Release() }
			if allocs := testing.AllocsPerRun(20, read); allocs > maxAllocsPerFrame {
				t.Fatalf("%v allocations, limit %d", allocs, maxAllocsPerFrame)
			}
			const runs = 50
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range runs {
				read()
			}
			runtime.ReadMemStats(&after)
			if got, limit := (after.TotalAlloc-before.TotalAlloc)/runs, uint64(DecodedFactor*len(payload)+allocSlack); got > limit {
				t.Fatalf("%d bytes allocated for a %d-byte payload, limit %d", got, len(payload), limit)
			}
		})
	}
}

// FuzzFromPayload: any command and payload in any state are treated as the
// v1 frame carrying them is, and nothing panics.
func FuzzFromPayload(f *testing.F) {
	// Map iteration order is random: sort for a stable mapping of cmd.
	commands := slices.Sorted(maps.Keys(commandRules))
	commands = append(commands, "cfindexdzz")
	f.Add(byte(0), byte(2), payloadOf(wire.NewMsgPing(1)))
	f.Add(byte(3), byte(1), []byte{0xfe, 0x50, 0xc3, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, cmd, state byte, payload []byte) {
		st := []State{beforeVerack, relayOff, relayOn, bloomOn}[int(state)%4]
		sameAsFrame(t, commands[int(cmd)%len(commands)], payload, st)
	})
}
