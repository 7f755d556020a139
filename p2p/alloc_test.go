package p2p

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// allocSlack is what reading and rejecting any frame may allocate besides
// its payload: the frame's error message and small structs.
const allocSlack = 2 << 10

// maxAllocsPerFrame bounds the allocations of reading and rejecting (or
// discarding) one frame, whatever it declares.
const maxAllocsPerFrame = 32

// hugeCountPayloads are payloads of every message a peer can send that
// declare far more elements than they carry: each must cost at most a
// small multiple of its own length, before or after the handshake, decoded
// or discarded.
func hugeCountPayloads() map[string][]byte {
	compact := func(n uint64) []byte { return wirescan.AppendCompactSize(nil, n) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	le32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	outpoint := make([]byte, 36)
	me := wire.NewNetAddressIPPort(nil, 0, 0)
	version := payloadOf(wire.NewMsgVersion(me, me, 1, 2))
	return map[string][]byte{
		"version user agent of 32 MB": cat(version[:80], compact(32_000_000)),
		"getheaders of 500 locators":  cat(le32(70016), compact(500), make([]byte, 32)),
		"inv of 50,000 entries":       compact(50_000),
		"getdata of 50,000 entries":   compact(50_000),
		"notfound of 50,000 entries":  compact(50_000),
		"tx of 3.7 million outputs":   cat(le32(2), compact(1), outpoint, compact(0), le32(0), compact(3_700_000)),
		"tx of 3.7 million inputs":    cat(le32(2), compact(3_700_000)),
		"tx of 4 million witness items": cat(le32(2), []byte{0, 1}, compact(1), outpoint, compact(0), le32(0),
			compact(1), make([]byte, 8), compact(0), compact(4_000_000)),
		"tx witness item of 4 MB": cat(le32(2), []byte{0, 1}, compact(1), outpoint, compact(0), le32(0),
			compact(1), make([]byte, 8), compact(0), compact(1), compact(4_000_000)),
		"tx script of 4 MB":             cat(le32(2), compact(1), outpoint, compact(4_000_000)),
		"headers of 2,000,000 entries":  compact(2_000_000),
		"addr of 1,000,000 entries":     compact(1_000_000),
		"addrv2 of 1,000,000 entries":   compact(1_000_000),
		"cfheaders of 1,000,000 hashes": cat([]byte{0}, make([]byte, 64), compact(1_000_000)),
		"cfcheckpt of 1,000,000 hashes": cat([]byte{0}, make([]byte, 32), compact(1_000_000)),
		"block of 1,000,000 txs":        cat(make([]byte, 80), compact(1_000_000)),
		"filterload of 36,000 bytes":    compact(36_000),
		"filteradd of 520 bytes":        compact(520),
		"getblocks of 500 locators":     cat(le32(70016), compact(500), make([]byte, 32)),
	}
}

// commandOf maps a payload name to its command.
func commandOf(name string) string {
	for _, cmd := range []string{"version", "getheaders", "inv", "getdata", "notfound", "tx", "headers", "addrv2", "addr", "cfheaders", "cfcheckpt", "block",
		"filterload", "filteradd", "getblocks"} {
		if len(name) > len(cmd) && name[:len(cmd)+1] == cmd+" " {
			return cmd
		}
	}
	panic(name)
}

// frameCost reads frame with a reused reader in state st and returns the
// allocations and bytes allocated per read.
func frameCost(t *testing.T, frame []byte, st readState) (allocs float64, bytesPerRead uint64) {
	t.Helper()
	r := bytes.NewReader(frame)
	fr := newTestFrameReader(r, nil)
	read := func() {
		r.Reset(frame)
		fr.rd.Reset(r)
		f, _ := fr.next(st)
		f.release()
	}
	allocs = testing.AllocsPerRun(20, read)
	const runs = 50
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		read()
	}
	runtime.ReadMemStats(&after)
	return allocs, (after.TotalAlloc - before.TotalAlloc) / runs
}

func TestHugeDeclaredCountsCostTheirPayload(t *testing.T) {
	for name, payload := range hugeCountPayloads() {
		frame := rawFrame(commandOf(name), payload)
		for _, st := range []struct {
			name string
			st   readState
		}{{"before verack", beforeVerack}, {"relay off", relayOff}, {"relay on", relayOn}, {"bloom on", bloomOn}} {
			t.Run(name+"/"+st.name, func(t *testing.T) {
				allocs, got := frameCost(t, frame, st.st)
				if limit := uint64(decodedFactor*len(payload) + allocSlack); got > limit {
					t.Fatalf("%d-byte payload allocated %d bytes (%.0f allocations), limit %d", len(payload), got, allocs, limit)
				}
				// Nothing is allocated per declared element either.
				if allocs > maxAllocsPerFrame {
					t.Fatalf("%d-byte payload cost %.0f allocations, limit %d", len(payload), allocs, maxAllocsPerFrame)
				}
			})
		}
	}
}

// Well-formed messages near their caps cost a small multiple of their
// payload once decoded.
func TestDecodedMessagesCostAMultipleOfTheirPayload(t *testing.T) {
	inv := wire.NewMsgInv()
	for i := range 5000 {
		_ = inv.AddInvVect(wire.NewInvVect(wire.InvTypeWitnessTx, &chainhash.Hash{byte(i), byte(i >> 8)}))
	}
	gd := wire.NewMsgGetData()
	gd.InvList = inv.InvList
	gh := wire.NewMsgGetHeaders()
	for i := range 101 {
		_ = gh.AddBlockLocatorHash(&chainhash.Hash{byte(i)})
	}
	manyIn := witnessTx(1)
	for i := range 20_000 {
		manyIn.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Index: uint32(i)}, Witness: wire.TxWitness{{}}})
	}
	manyOut := legacyTx(2)
	for range 100_000 {
		manyOut.AddTxOut(&wire.TxOut{})
	}
	for _, m := range []wire.Message{inv, gd, gh, manyIn, manyOut} {
		payload := payloadOf(m)
		t.Run(m.Command(), func(t *testing.T) {
			allocs, got := frameCost(t, rawFrame(m.Command(), payload), relayOn)
			if limit := uint64(decodedFactor*len(payload) + allocSlack); got > limit {
				t.Fatalf("%d-byte payload allocated %d bytes (%.0f allocations), limit %d", len(payload), got, allocs, limit)
			}
		})
	}
}
