package p2p

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/bloom"
	"github.com/cfindexd/cfindexd/internal/p2pclient"
	"github.com/cfindexd/cfindexd/mempool"
)

// bloomChain is a chain of real blocks for BIP-37 tests: every block's
// header commits to its transactions (so wallets' merkleblock checks
// pass), its transactions pay P2PKH, P2WPKH and P2PK scripts of random keys
// and spend the previous block's outputs, and the view and node serve it.
type bloomChain struct {
	view   *fakeView
	node   *fakeNode
	blocks []*wire.MsgBlock
	// keys are the 20-byte hashes and 33-byte keys paid to, by block.
	keys [][][]byte
}

// newBloomChain builds n blocks of txs transactions each (plus a coinbase),
// 10 minutes apart.
func newBloomChain(t testing.TB, n, txs int, seed uint64) *bloomChain {
	t.Helper()
	return newBloomChainSpaced(t, n, txs, seed, 10*time.Minute)
}

// newBloomChainSpaced is newBloomChain with block times spacing apart.
func newBloomChainSpaced(t testing.TB, n, txs int, seed uint64, spacing time.Duration) *bloomChain {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 37))
	c := &bloomChain{view: newFakeView(0, seed), node: &fakeNode{blocks: map[chainhash.Hash]*wire.MsgBlock{}}}
	var prev []wire.OutPoint
	var prevHash chainhash.Hash
	var prevFH chainhash.Hash
	for h := range n {
		blk := wire.NewMsgBlock(&wire.BlockHeader{Version: 4, PrevBlock: prevHash, Bits: 0x207fffff,
			Timestamp: time.Unix(1_700_000_000, 0).Add(time.Duration(h) * spacing), Nonce: rng.Uint32()})
		var keys [][]byte
		coinbase := wire.NewMsgTx(2)
		coinbase.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Index: 0xffffffff}, SignatureScript: binary.LittleEndian.AppendUint32([]byte{4}, uint32(h)), Sequence: 0xffffffff})
		k := randomBytes(rng, 20)
		keys = append(keys, k)
		coinbase.AddTxOut(wire.NewTxOut(50e8, p2pkhScript(k)))
		_ = blk.AddTransaction(coinbase)
		var outs []wire.OutPoint
		outs = append(outs, wire.OutPoint{Hash: coinbase.TxHash(), Index: 0})
		for i := range txs {
			tx := wire.NewMsgTx(2)
			if i < len(prev) {
				tx.AddTxIn(&wire.TxIn{PreviousOutPoint: prev[i], SignatureScript: append([]byte{0x21}, randomBytes(rng, 33)...), Sequence: 0xfffffffd})
			} else {
				tx.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Hash: chainhash.Hash(randomBytes(rng, 32)), Index: rng.Uint32N(4)},
					Witness: wire.TxWitness{randomBytes(rng, 71), randomBytes(rng, 33)}, Sequence: 0xfffffffd})
			}
			for j := range 2 {
				var script []byte
				switch (i + j) % 3 {
				case 0:
					k := randomBytes(rng, 20)
					keys = append(keys, k)
					script = p2pkhScript(k)
				case 1:
					k := randomBytes(rng, 20)
					keys = append(keys, k)
					script = append([]byte{0x00, 0x14}, k...)
				default:
					k := append([]byte{0x02}, randomBytes(rng, 32)...)
					keys = append(keys, k)
					script = append(append([]byte{0x21}, k...), 0xac)
				}
				tx.AddTxOut(wire.NewTxOut(int64(1000+rng.IntN(1e6)), script))
			}
			_ = blk.AddTransaction(tx)
			for j := range tx.TxOut {
				outs = append(outs, wire.OutPoint{Hash: tx.TxHash(), Index: uint32(j)})
			}
		}
		txids := bloom.BlockTxids(blk)
		all := make([]bool, len(txids))
		for i := range all {
			all[i] = true
		}
		root, _, err := bloom.NewPartialMerkleTree(txids, all).ExtractMatches()
		if err != nil {
			t.Fatal(err)
		}
		blk.Header.MerkleRoot = root
		hash := blk.BlockHash()
		filter := randomBytes(rng, 1+rng.IntN(100))
		fh := chainhash.DoubleHashH(filter)
		prevFH = chainhash.DoubleHashH(append(fh[:], prevFH[:]...))
		c.view.commit(&fakeBlock{height: uint32(h), hash: hash, header: blk.Header, filter: filter, filterHeader: prevFH})
		c.node.blocks[hash] = blk
		c.blocks = append(c.blocks, blk)
		c.keys = append(c.keys, keys)
		prev, prevHash = outs, hash
	}
	return c
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func p2pkhScript(hash20 []byte) []byte {
	return append(append([]byte{0x76, 0xa9, 0x14}, hash20...), 0x88, 0xac)
}

func (c *bloomChain) hashes(from, to int) []chainhash.Hash {
	out := make([]chainhash.Hash, 0, to-from+1)
	for h := from; h <= to; h++ {
		out = append(out, c.blocks[h].BlockHash())
	}
	return out
}

// bloomConfig is testConfig serving the chain with BIP-37 on.
func (c *bloomChain) bloomConfig() Config {
	cfg := testConfig(c.view)
	cfg.Blocks = c.node
	cfg.Bloom.Enabled = true
	return cfg
}

// walletFilter is a filter (p = 0.0001, n = 50) holding keys.
func walletFilter(t testing.TB, flags wire.BloomUpdateType, keys ...[]byte) *bloom.Filter {
	t.Helper()
	p, err := bloom.ParamsFor(max(50, len(keys)), 0.0001)
	if err != nil {
		t.Fatal(err)
	}
	f := bloom.New(p, 7, flags)
	for _, k := range keys {
		f.Insert(k)
	}
	return f
}

// dialBloom connects a p2pclient (a BIP-37 wallet's connection) to srv.
func dialBloom(t testing.TB, addr string, relay bool) *p2pclient.Peer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	p, err := p2pclient.Dial(ctx, addr, p2pclient.Options{Params: testConfig(nil).Params, Require: wire.SFNodeBloom, Relay: relay, Timeout: ioTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// fakeMempool is a mempool.Source whose mempool tests set.
type fakeMempool struct {
	mu  chan struct{}
	txs map[chainhash.Hash][]byte
	ids []chainhash.Hash
}

func newFakeMempool() *fakeMempool {
	return &fakeMempool{mu: make(chan struct{}, 1), txs: map[chainhash.Hash][]byte{}}
}

func (m *fakeMempool) lock()   { m.mu <- struct{}{} }
func (m *fakeMempool) unlock() { <-m.mu }

// add puts tx in the node's mempool.
func (m *fakeMempool) add(t testing.TB, tx *wire.MsgTx) {
	t.Helper()
	raw := encodeTx(t, tx, true)
	m.lock()
	defer m.unlock()
	m.txs[tx.TxHash()] = raw
	m.ids = append(m.ids, tx.TxHash())
}

func (m *fakeMempool) GetRawMempool(context.Context, bool) (mempool.Snapshot, error) {
	m.lock()
	defer m.unlock()
	return mempool.Snapshot{Txids: append([]chainhash.Hash(nil), m.ids...)}, nil
}

func (m *fakeMempool) GetMempoolTransactions(_ context.Context, ids []chainhash.Hash) ([][]byte, error) {
	m.lock()
	defer m.unlock()
	out := make([][]byte, len(ids))
	for i, id := range ids {
		out[i] = m.txs[id]
	}
	return out, nil
}

func (m *fakeMempool) GetRawBlock(context.Context, chainhash.Hash) (*wire.MsgBlock, error) {
	return nil, ErrNotFound
}

// startMirror runs a mirror of src polled every 20 ms until the test ends.
func startMirror(t testing.TB, src mempool.Source) *mempool.Mirror {
	t.Helper()
	m, err := mempool.NewMirror(src, mempool.Config{PollInterval: 20 * time.Millisecond}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return m
}

func encodeTx(t testing.TB, tx *wire.MsgTx, witness bool) []byte {
	t.Helper()
	var buf []byte
	w := &sliceWriter{&buf}
	var err error
	if witness {
		err = tx.Serialize(w)
	} else {
		err = tx.SerializeNoWitness(w)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf
}

type sliceWriter struct{ b *[]byte }

func (w *sliceWriter) Write(p []byte) (int, error) { *w.b = append(*w.b, p...); return len(p), nil }
