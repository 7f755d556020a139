package msgread

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/attackwire"
	"github.com/cfindexd/cfindexd/internal/testtx"
)

// allocSlack is what reading and rejecting any frame may allocate besides
// its payload: the frame's error message and small structs.
const allocSlack = 2 << 10

// maxAllocsPerFrame bounds the allocations of reading and rejecting (or
// discarding) one frame, whatever it declares.
const maxAllocsPerFrame = 32

// frameCost reads frame with a reused reader in state st and returns the
// allocations and bytes allocated per read.
func frameCost(t *testing.T, frame []byte, st State) (allocs float64, bytesPerRead uint64) {
	t.Helper()
	r := bytes.NewReader(frame)
	fr := newTestFrameReader(r, nil)
	read := func() {
		r.Reset(frame)
		fr.R.Reset(r)
		f, _ := fr.Next(st)
		f.Release()
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
	for name, payload := range attackwire.HugeCountPayloads() {
		frame := rawFrame(attackwire.CommandOf(name), payload)
		for _, st := range []struct {
			name string
			st   State
		}{{"before verack", beforeVerack}, {"relay off", relayOff}, {"relay on", relayOn}, {"bloom on", bloomOn}} {
			t.Run(name+"/"+st.name, func(t *testing.T) {
				allocs, got := frameCost(t, frame, st.st)
				if limit := uint64(DecodedFactor*len(payload) + allocSlack); got > limit {
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
	manyIn := testtx.Witness(1)
	for i := range 20_000 {
		manyIn.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Index: uint32(i)}, Witness: wire.TxWitness{{}}})
	}
	manyOut := testtx.Legacy(2)
	for range 100_000 {
		manyOut.AddTxOut(&wire.TxOut{})
	}
	for _, m := range []wire.Message{inv, gd, gh, manyIn, manyOut} {
		payload := payloadOf(m)
		t.Run(m.Command(), func(t *testing.T) {
			allocs, got := frameCost(t, rawFrame(m.Command(), payload), relayOn)
			if limit := uint64(DecodedFactor*len(payload) + allocSlack); got > limit {
				t.Fatalf("%d-byte payload allocated %d bytes (%.0f allocations), limit %d", len(payload), got, allocs, limit)
			}
		})
	}
}
