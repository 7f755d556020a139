package bloom

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// FuzzDecodeMerkleBlock feeds the merkleblock decoder untrusted bytes: it
// never panics; what it accepts re-encodes to the same bytes and wire
// decodes to the same message; Verify never panics, and a tree it accepts
// has at most one match per transaction, in ascending order.
func FuzzDecodeMerkleBlock(f *testing.F) {
	f.Add(sampleMerkleBlock(f).Bytes())
	for _, n := range []int{1, 2, 3, 16} {
		rng := rand.New(rand.NewPCG(uint64(n), 0))
		txids := randomTxids(rng, n)
		matched := make([]bool, n)
		matched[n-1] = true
		mb := MerkleBlock{Header: wire.BlockHeader{MerkleRoot: merkleRoot(txids)}, Tree: *NewPartialMerkleTree(txids, matched)}
		f.Add(mb.Bytes())
	}
	f.Add(make([]byte, minMerkleBlockSize))
	f.Fuzz(func(t *testing.T, payload []byte) {
		mb, err := DecodeMerkleBlock(payload)
		if err != nil {
			return
		}
		if !bytes.Equal(mb.Bytes(), payload) {
			t.Fatal("re-encoding differs from the accepted input")
		}
		var w wire.MsgMerkleBlock
		if err := w.BtcDecode(bytes.NewReader(payload), wire.ProtocolVersion, wire.BaseEncoding); err != nil {
			t.Fatalf("we accept what wire refuses: %v", err)
		}
		if w.Transactions != mb.Tree.Transactions || len(w.Hashes) != len(mb.Tree.Hashes) || !bytes.Equal(w.Flags, mb.Tree.Flags) {
			t.Fatal("wire decodes another message")
		}
		matches, err := mb.Verify()
		if err != nil {
			return
		}
		for i, m := range matches {
			if m.Index >= mb.Tree.Transactions || i > 0 && m.Index <= matches[i-1].Index {
				t.Fatalf("match %d at index %d of %d (previous %v)", i, m.Index, mb.Tree.Transactions, matches[:i])
			}
		}
	})
}

// FuzzPartialMerkleTree builds trees over fuzzed match patterns: they
// always extract back to the merkle root and the pattern.
func FuzzPartialMerkleTree(f *testing.F) {
	f.Add(uint16(1), []byte{1})
	f.Add(uint16(7), []byte{0x12})
	f.Add(uint16(300), []byte{0xff, 0, 0x80})
	f.Fuzz(func(t *testing.T, n uint16, pattern []byte) {
		count := int(n)%2000 + 1
		rng := rand.New(rand.NewPCG(uint64(n), uint64(len(pattern))))
		txids := randomTxids(rng, count)
		matched := make([]bool, count)
		var want []Match
		for i := range matched {
			if len(pattern) > 0 && pattern[(i/8)%len(pattern)]&(1<<(i%8)) != 0 {
				matched[i] = true
				want = append(want, Match{Index: uint32(i), Txid: txids[i]})
			}
		}
		root, got, err := NewPartialMerkleTree(txids, matched).ExtractMatches()
		if err != nil || root != merkleRoot(txids) || !slices.Equal(got, want) {
			t.Fatalf("n=%d: %v, root ok %v, %d of %d matches", count, err, root == merkleRoot(txids), len(got), len(want))
		}
	})
}

// FuzzScriptPushes checks our walk of a script (Core's GetOp) against
// btcd's tokenizer: on scripts btcd parses to the end, both see the same
// pushes in the same order (btcd also reports OP_0 as an empty push, which
// Core never tests); on scripts it does not, ours stops at the same
// malformed push and keeps the pushes before it, where btcd's PushedData
// returns nothing at all.
func FuzzScriptPushes(f *testing.F) {
	f.Add([]byte{0x76, 0xa9, 0x14, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 0x88, 0xac})
	f.Add([]byte{0x00, 0x4c, 0x00, 0x4d, 0x01, 0x00, 0xaa, 0x4e})
	f.Add([]byte{0x01, 0xaa, 0x05, 0x01})
	f.Fuzz(func(t *testing.T, script []byte) {
		ours, failed := pushes(script)
		theirs, err := txscript.PushedData(script)
		if (err != nil) != failed {
			t.Fatalf("we fail %v, btcd %v", failed, err)
		}
		if err != nil {
			return
		}
		theirs = slices.DeleteFunc(theirs, func(d []byte) bool { return d == nil }) // OP_0
		if len(ours) != len(theirs) {
			t.Fatalf("%d pushes, btcd %d", len(ours), len(theirs))
		}
		for i := range ours {
			if !bytes.Equal(ours[i], theirs[i]) {
				t.Fatalf("push %d differs", i)
			}
		}
	})
}

// FuzzMatchTx runs the matcher over fuzzed transactions and filters: it
// never panics and never finds a false negative for an inserted txid,
// output push or outpoint.
func FuzzMatchTx(f *testing.F) {
	v := loadCoreVectors(f)
	f.Add(mustHex(f, v.BloomMatchTx), uint16(100), uint8(10), uint32(0), uint8(1))
	f.Add(mustHex(f, v.BloomMatchSpendingTx), uint16(0), uint8(0), uint32(7), uint8(2))
	f.Fuzz(func(t *testing.T, rawTx []byte, size uint16, k uint8, tweak uint32, flags uint8) {
		var tx wire.MsgTx
		if tx.Deserialize(bytes.NewReader(rawTx)) != nil {
			return
		}
		fl, err := Load(wire.NewMsgFilterLoad(make([]byte, int(size)%(MaxFilterSize+1)), uint32(k)%(MaxHashFuncs+1), tweak, wire.BloomUpdateType(flags)))
		if err != nil {
			t.Fatal(err)
		}
		txid := tx.TxHash()
		fl.MatchTxAndUpdate(&tx, &txid)
		probe := fl.Clone()
		probe.Insert(txid[:])
		if !probe.MatchTxAndUpdate(&tx, &txid) {
			t.Fatal("inserted txid not matched")
		}
		for _, in := range tx.TxIn {
			probe := fl.Clone()
			probe.InsertOutPoint(in.PreviousOutPoint)
			if !probe.MatchTxAndUpdate(&tx, &txid) {
				t.Fatal("inserted outpoint not matched")
			}
		}
		for _, out := range tx.TxOut {
			ps, _ := pushes(out.PkScript)
			for _, p := range ps {
				if len(p) == 0 {
					continue
				}
				probe := fl.Clone()
				probe.Insert(p)
				if !probe.MatchTxAndUpdate(&tx, &txid) {
					t.Fatalf("inserted output push %x not matched", p)
				}
			}
		}
	})
}
