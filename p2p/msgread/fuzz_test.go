package msgread

import (
	"bytes"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/cfindexd/cfindexd/internal/testtx"
	"golang.org/x/sync/semaphore"
)

// FuzzReadFrame feeds an untrusted byte stream to the frame reader in each
// connection state: it must never panic, never read past a frame it
// rejected, and never buffer more than the stream held.
func FuzzReadFrame(f *testing.F) {
	net := chaincfg.RegressionNetParams.Net
	for _, m := range []wire.Message{wire.NewMsgPing(1), wire.NewMsgGetCFCheckpt(0, &chainhash.Hash{}), testtx.Witness(3)} {
		fr := encodeFrame(m, net, wire.WitnessEncoding)
		f.Add(byte(2), fr)
	}
	f.Add(byte(0), rawHeader(net, "getheaders", 1<<31))
	f.Add(byte(1), rawFrame(wire.CmdInv, []byte{0xfe, 0x50, 0xc3, 0x00, 0x00}))
	f.Fuzz(func(t *testing.T, state byte, stream []byte) {
		st := []State{beforeVerack, relayOff, relayOn}[int(state)%3]
		fr := newTestFrameReader(bytes.NewReader(stream), semaphore.NewWeighted(1<<20))
		for i := 0; i < 64; i++ {
			f, err := fr.Next(st)
			if err != nil {
				if f.Msg != nil {
					t.Fatal("message returned with an error")
				}
				return
			}
			f.Release()
		}
	})
}

// FuzzScanTx compares scanTx with wire's decoder on untrusted bytes: both
// accept exactly the same payloads (wire consuming them whole), and agree on
// txid and wtxid.
func FuzzScanTx(f *testing.F) {
	for _, tx := range []*wire.MsgTx{testtx.Witness(1), testtx.Legacy(2), wire.NewMsgTx(2)} {
		f.Add(payloadOf(tx))
	}
	f.Add([]byte{1, 0, 0, 0, 0, 0xfe, 0x40, 0x75, 0x38, 0x00})
	f.Fuzz(func(t *testing.T, payload []byte) {
		txid, wtxid, err := scanTx(payload)
		var tx wire.MsgTx
		r := bytes.NewReader(payload)
		werr := tx.BtcDecode(r, wire.ProtocolVersion, wire.WitnessEncoding)
		if werr == nil && r.Len() != 0 {
			werr = errors.New("trailing bytes")
		}
		if (err == nil) != (werr == nil) {
			t.Fatalf("scanTx error %v, wire error %v", err, werr)
		}
		if err != nil {
			if !errors.Is(err, ErrMisbehaving) {
				t.Fatalf("scanTx error not classed as misbehaviour: %v", err)
			}
			return
		}
		if txid != tx.TxHash() || wtxid != tx.WitnessHash() {
			t.Fatalf("ids %s/%s, wire %s/%s", txid, wtxid, tx.TxHash(), tx.WitnessHash())
		}
	})
}
