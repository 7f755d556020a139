package wirescan_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/corefixture"
	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// scanAgreesWithWire checks ScanBlockUnchecked(raw) against wire's decoder:
// when the scanner accepts raw, wire must accept it too and both must see
// the same header, hash, txids, output scripts and spent outpoints; when
// wire accepts raw using every byte, the scanner must accept it too,
// unless it holds no transaction (no coinbase), which only wire allows. It
// returns what differs, or "".
func scanAgreesWithWire(raw []byte) string {
	got, scanErr := wirescan.ScanBlockUnchecked(raw)
	var blk wire.MsgBlock
	r := bytes.NewReader(raw)
	wireErr := blk.Deserialize(r)
	switch {
	case scanErr != nil && wireErr == nil && len(blk.Transactions) == 0:
		return "" // a block without a coinbase is refused on purpose
	case scanErr != nil && wireErr == nil && r.Len() == 0:
		return fmt.Sprintf("scanner rejects what wire accepts: %v", scanErr)
	case scanErr != nil:
		return ""
	case wireErr != nil:
		return fmt.Sprintf("scanner accepts what wire rejects: %v", wireErr)
	case r.Len() != 0:
		return "scanner accepts trailing bytes"
	}
	if got.Header != blk.Header || got.Hash != blk.BlockHash() {
		return "header or hash differs"
	}
	if len(got.Txids) != len(blk.Transactions) {
		return fmt.Sprintf("%d txids, wire has %d transactions", len(got.Txids), len(blk.Transactions))
	}
	var spends []wire.OutPoint
	for i, tx := range blk.Transactions {
		if got.Txids[i] != tx.TxHash() {
			return fmt.Sprintf("tx %d: txid %s, wire %s", i, got.Txids[i], tx.TxHash())
		}
		outs := make([][]byte, len(tx.TxOut))
		for j, o := range tx.TxOut {
			outs[j] = o.PkScript
		}
		if !equalScripts(got.TxOuts(i), outs) {
			return fmt.Sprintf("tx %d: output scripts differ", i)
		}
		if i > 0 {
			for _, in := range tx.TxIn {
				spends = append(spends, in.PreviousOutPoint)
			}
		}
	}
	if len(spends) != len(got.Spends) {
		return fmt.Sprintf("%d spends, wire %d", len(got.Spends), len(spends))
	}
	for i := range spends {
		if spends[i] != got.Spends[i] {
			return fmt.Sprintf("spend %d: %s, wire %s", i, got.Spends[i], spends[i])
		}
	}
	return ""
}

// recordedBlocks returns the serialized blocks of the Bitcoin Core v31
// recording, legacy and segwit transactions mixed.
func recordedBlocks(t testing.TB) []*corefixture.Block {
	fx := corefixture.Load(t)
	return append(append([]*corefixture.Block(nil), fx.Blocks...), fx.Early...)
}

// Every block Bitcoin Core served in the recording scans to what wire
// decodes, and each of its transactions scans on its own to the same txid
// and outputs.
func TestScanBlockMatchesWireOnRecordedBlocks(t *testing.T) {
	n, witness := 0, 0
	for _, b := range recordedBlocks(t) {
		if diff := scanAgreesWithWire(b.Raw); diff != "" {
			t.Fatalf("%s: %s", b.Name(), diff)
		}
		sb, err := wirescan.ScanBlock(b.Raw, b.Hash)
		if err != nil {
			t.Fatalf("%s: %v", b.Name(), err)
		}
		var blk wire.MsgBlock
		if err := blk.Deserialize(bytes.NewReader(b.Raw)); err != nil {
			t.Fatal(err)
		}
		for i, tx := range blk.Transactions {
			n++
			if tx.HasWitness() {
				witness++
			}
			var buf bytes.Buffer
			if err := tx.Serialize(&buf); err != nil {
				t.Fatal(err)
			}
			st, err := wirescan.ScanTx(buf.Bytes())
			if err != nil {
				t.Fatalf("%s tx %d: %v", b.Name(), i, err)
			}
			if st.TxID != sb.Txids[i] || !equalScripts(st.Outs, sb.TxOuts(i)) {
				t.Fatalf("%s tx %d: scanned alone it differs from the block's", b.Name(), i)
			}
		}
	}
	if witness == 0 || n == witness {
		t.Fatalf("fixture lacks a mix: %d transactions, %d with witness", n, witness)
	}
}

// segwitBlock returns a recorded block with more than one transaction,
// one of them with witness data.
func segwitBlock(t testing.TB) *corefixture.Block {
	for _, b := range recordedBlocks(t) {
		var blk wire.MsgBlock
		if err := blk.Deserialize(bytes.NewReader(b.Raw)); err != nil {
			t.Fatal(err)
		}
		if len(blk.Transactions) > 1 && blk.Transactions[1].HasWitness() {
			return b
		}
	}
	t.Fatal("no recorded block with a segwit transaction")
	return nil
}

// Every truncation of a block, trailing bytes, a bad witness flag, a
// non-canonical count, a count beyond the data, a block other than the one
// asked for and a transaction changed under its merkle root are rejected
// with an error, without a panic.
func TestScanBlockRejectsMalformed(t *testing.T) {
	b := segwitBlock(t)
	raw := b.Raw
	for n := 0; n < len(raw); n++ {
		if _, err := wirescan.ScanBlock(raw[:n], b.Hash); err == nil {
			t.Fatalf("truncated to %d of %d bytes: got %v", n, len(raw), err)
		}
	}
	edit := func(f func(r []byte) []byte) []byte { return f(bytes.Clone(raw)) }
	// The second transaction starts after the header, the count and the
	// coinbase; find it by scanning.
	sb, err := wirescan.ScanBlock(raw, b.Hash)
	if err != nil {
		t.Fatal(err)
	}
	s := wirescan.NewReader(raw)
	if err := s.Skip(wirescan.BlockHeaderSize + 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tx(nil, nil); err != nil {
		t.Fatal(err)
	}
	tx1 := s.Offset()
	if raw[tx1+4] != 0x00 || raw[tx1+5] != 0x01 {
		t.Fatalf("transaction 1 is not in witness encoding")
	}
	lastScript := sb.Outs[len(sb.Outs)-1]
	scriptAt := bytes.LastIndex(raw, lastScript)

	cases := []struct {
		name string
		raw  []byte
		want chainhash.Hash
	}{
		{"trailing byte", append(bytes.Clone(raw), 0), b.Hash},
		{"witness flag 0x02", edit(func(r []byte) []byte { r[tx1+5] = 0x02; return r }), b.Hash},
		{"non-canonical tx count", append(append(bytes.Clone(raw[:wirescan.BlockHeaderSize]), 0xfd, raw[wirescan.BlockHeaderSize], 0x00), raw[wirescan.BlockHeaderSize+1:]...), b.Hash},
		{"tx count beyond the data", append(append(bytes.Clone(raw[:wirescan.BlockHeaderSize]), 0xfe, 0xff, 0xff, 0xff, 0x7f), raw[wirescan.BlockHeaderSize+1:]...), b.Hash},
		{"another block", raw, chainhash.Hash{1}},
		{"script changed under the merkle root", edit(func(r []byte) []byte { r[scriptAt] ^= 1; return r }), b.Hash},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := wirescan.ScanBlock(c.raw, c.want); err == nil {
				t.Fatalf("got %v, want an error", err)
			}
		})
	}
	if _, err := wirescan.ScanTx(append(bytes.Clone(raw[tx1:tx1+10]), 0xff)); err == nil {
		t.Fatalf("truncated transaction: got %v", err)
	}
}

// FuzzScanBlock checks the in-place scanner against wire's decoder on
// arbitrary bytes: they accept the same blocks and read them the same way.
func FuzzScanBlock(f *testing.F) {
	for i, b := range recordedBlocks(f) {
		if i%8 == 0 || len(b.Raw) > 1000 {
			f.Add(b.Raw)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if diff := scanAgreesWithWire(raw); diff != "" {
			t.Fatal(diff)
		}
	})
}

// BenchmarkScanBlock compares reading the recorded blocks in place with
// decoding them into wire.MsgBlock and hashing their transactions.
func BenchmarkScanBlock(b *testing.B) {
	blocks := recordedBlocks(b)
	size := 0
	for _, blk := range blocks {
		size += len(blk.Raw)
	}
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			for _, blk := range blocks {
				if _, err := wirescan.ScanBlock(blk.Raw, blk.Hash); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("wire", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			for _, blk := range blocks {
				var m wire.MsgBlock
				if err := m.Deserialize(bytes.NewReader(blk.Raw)); err != nil {
					b.Fatal(err)
				}
				txids := make([]chainhash.Hash, len(m.Transactions))
				for i, tx := range m.Transactions {
					txids[i] = tx.TxHash()
				}
				if wirescan.MerkleRoot(txids) != m.Header.MerkleRoot {
					b.Fatal("merkle root")
				}
			}
		}
	})
}

// FuzzScanTx checks ScanTx against wire's transaction decoder on arbitrary
// bytes: it accepts exactly the single transactions wire decodes using
// every byte, with the same txid and output scripts.
func FuzzScanTx(f *testing.F) {
	for i, b := range recordedBlocks(f) {
		if i%16 != 0 {
			continue
		}
		var blk wire.MsgBlock
		if err := blk.Deserialize(bytes.NewReader(b.Raw)); err != nil {
			f.Fatal(err)
		}
		for _, tx := range blk.Transactions {
			var buf bytes.Buffer
			if err := tx.Serialize(&buf); err != nil {
				f.Fatal(err)
			}
			f.Add(buf.Bytes())
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, scanErr := wirescan.ScanTx(raw)
		var tx wire.MsgTx
		r := bytes.NewReader(raw)
		wireErr := tx.Deserialize(r)
		wireOK := wireErr == nil && r.Len() == 0
		if (scanErr == nil) != wireOK {
			t.Fatalf("scanner error %v, wire error %v with %d bytes left", scanErr, wireErr, r.Len())
		}
		if scanErr != nil {
			return
		}
		if got.TxID != tx.TxHash() {
			t.Fatalf("txid %s, wire %s", got.TxID, tx.TxHash())
		}
		outs := make([][]byte, len(tx.TxOut))
		for i, o := range tx.TxOut {
			outs[i] = o.PkScript
		}
		if !equalScripts(got.Outs, outs) {
			t.Fatal("output scripts differ")
		}
	})
}

func equalScripts(a, b [][]byte) bool { return slices.EqualFunc(a, b, bytes.Equal) }

// MerkleRoot agrees with a plain reference for odd and even transaction
// counts.
func TestMerkleRootAgrees(t *testing.T) {
	for n := 1; n <= 9; n++ {
		txs := make([]*wire.MsgTx, n)
		txids := make([]chainhash.Hash, n)
		for i := range txs {
			tx := wire.NewMsgTx(2)
			tx.AddTxOut(wire.NewTxOut(int64(i), []byte{0x51}))
			txs[i], txids[i] = tx, tx.TxHash()
		}
		if got, want := wirescan.MerkleRoot(txids), merkleRoot(txs); got != want {
			t.Fatalf("%d txs: %s, want %s", n, got, want)
		}
	}
}

// merkleRoot computes the block merkle root over txids (Bitcoin's
// duplicate-last-on-odd rule).
func merkleRoot(txs []*wire.MsgTx) chainhash.Hash {
	level := make([]chainhash.Hash, len(txs))
	for i, tx := range txs {
		level[i] = tx.TxHash()
	}
	var buf [2 * chainhash.HashSize]byte
	for len(level) > 1 {
		if len(level)%2 == 1 {
			level = append(level, level[len(level)-1])
		}
		next := level[:len(level)/2]
		for i := range next {
			copy(buf[:chainhash.HashSize], level[2*i][:])
			copy(buf[chainhash.HashSize:], level[2*i+1][:])
			next[i] = chainhash.DoubleHashH(buf[:])
		}
		level = next
	}
	return level[0]
}
