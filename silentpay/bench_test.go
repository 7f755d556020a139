package silentpay

import (
	"bytes"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// BenchmarkBlockTweaks measures the tweak work of one generated block of
// 500 transactions (every input kind, fixed seed): BlockBuilder.Build on
// the serialized block, against the straightforward peer in the same run
// (wire decoding and refTweak per transaction). It reports transactions
// per second per core for each and ours/peer, the speed ratio.
func BenchmarkBlockTweaks(b *testing.B) {
	g := newTxGen(10)
	msg, prev := g.block(500, chainhash.Hash{})
	raw := serializeBlock(b, msg)
	ntx := float64(len(msg.Transactions) - 1)
	var bb BlockBuilder
	var ours, peer time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := bb.Build(raw, prev); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		var m wire.MsgBlock
		if err := m.Deserialize(bytes.NewReader(raw)); err != nil {
			b.Fatal(err)
		}
		rest := prev
		for _, tx := range m.Transactions[1:] {
			refTweak(tx, rest[:len(tx.TxIn)])
			rest = rest[len(tx.TxIn):]
		}
		ours += mid.Sub(start)
		peer += time.Since(mid)
	}
	n := float64(b.N)
	oursRate := ntx * n / ours.Seconds()
	peerRate := ntx * n / peer.Seconds()
	b.ReportMetric(oursRate, "tx/s")
	b.ReportMetric(peerRate, "peer-tx/s")
	b.ReportMetric(oursRate/peerRate, "ours/peer")
}

// BenchmarkScan measures a wallet scanning one transaction's tweak with
// two taproot outputs and the change label, as cfscan will per tweak.
func BenchmarkScan(b *testing.B) {
	g := newTxGen(11)
	sc, err := NewScanner(g.key(), g.key().PubKey(), []uint32{1, 2, 3})
	if err != nil {
		b.Fatal(err)
	}
	tweak := [33]byte(g.key().PubKey().SerializeCompressed())
	outs := [][32]byte{[32]byte(g.bytes(32)), [32]byte(g.bytes(32))}
	for b.Loop() {
		if _, err := sc.Scan(tweak, outs); err != nil {
			b.Fatal(err)
		}
	}
}
