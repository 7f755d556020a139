package mempool

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Held transactions are numbered in arrival order (never reused after a
// removal), found by wtxid as by txid, and Range reads them a chunk at a
// time after a given number; removals and evictions drop them from every
// index.
func TestMempoolSeqWtxidRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	m := newTestMirror(t, newFakeMempool(), Config{MaxBytes: 1 << 30})
	var ids []chainhash.Hash
	for range 10 {
		raw, id := randomMempoolTx(rng)
		if !m.add(id, bytes.Clone(raw)) {
			t.Fatal("not added")
		}
		ids = append(ids, id)
	}
	if m.LastSeq() != 10 {
		t.Fatalf("LastSeq %d", m.LastSeq())
	}
	for i, id := range ids {
		mt, ok := m.Get(id)
		if !ok || mt.Seq != uint64(i+1) {
			t.Fatalf("tx %d: seq %d", i, mt.Seq)
		}
		var tx wire.MsgTx
		if err := tx.Deserialize(bytes.NewReader(mt.Raw)); err != nil {
			t.Fatal(err)
		}
		if mt.Wtxid != tx.WitnessHash() {
			t.Fatalf("tx %d: wtxid %s, want %s", i, mt.Wtxid, tx.WitnessHash())
		}
		if byW, ok := m.GetWtx(mt.Wtxid); !ok || byW != mt {
			t.Fatalf("tx %d not found by wtxid", i)
		}
	}
	m.remove(ids[2:4])
	if _, ok := m.GetWtx(ids[2]); ok {
		t.Fatal("removed transaction still found by wtxid")
	}
	var seqs []uint64
	for after := uint64(0); ; {
		chunk := m.Range(after, 3)
		if len(chunk) == 0 {
			break
		}
		for _, mt := range chunk {
			seqs = append(seqs, mt.Seq)
		}
		after = chunk[len(chunk)-1].Seq
	}
	want := []uint64{1, 2, 5, 6, 7, 8, 9, 10}
	if len(seqs) != len(want) {
		t.Fatalf("Range read %v, want %v", seqs, want)
	}
	for i := range want {
		if seqs[i] != want[i] {
			t.Fatalf("Range read %v, want %v", seqs, want)
		}
	}
	raw, id := randomMempoolTx(rng)
	m.add(id, raw)
	if mt, _ := m.Get(id); mt.Seq != 11 {
		t.Fatalf("a new transaction after removals got seq %d", mt.Seq)
	}
}
