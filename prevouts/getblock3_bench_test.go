package prevouts

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/corefixture"
	"github.com/cfindexd/cfindexd/internal/nodetest"
	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// BenchmarkGetBlock3 compares the streaming getblock-3 decoder with the
// reference one (encoding/json into structs, then wire.MsgTx), on every
// recorded Core v31 reply and on a synthetic mainnet-shaped reply (2,500
// transactions with mainnet's mix of scripts, each input with its prevout,
// in Core's layout: asm, descriptors, addresses, amounts), in MB/s of JSON:
//
//	go test -run '^$' -bench GetBlock3 -benchmem ./prevouts/
func BenchmarkGetBlock3(b *testing.B) {
	fx := corefixture.Load(b)
	var recorded []*corefixture.Block
	size := 0
	for _, blk := range fx.AllBlocks() {
		recorded = append(recorded, blk)
		size += len(blk.Verbose3)
	}
	synth := synthGetBlock3(b, 2500, 1)
	for _, c := range []struct {
		name   string
		decode func(doc []byte, want chainhash.Hash) error
	}{
		{"stream", func(doc []byte, want chainhash.Hash) error {
			_, err := decodeGetBlock3(doc, want)
			return err
		}},
		{"reference", func(doc []byte, want chainhash.Hash) error {
			_, _, err := parseVerboseBlockReference(doc, want)
			return err
		}},
	} {
		b.Run("recorded/"+c.name, func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				for _, blk := range recorded {
					if err := c.decode(blk.Verbose3, blk.Hash); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run("mainnet-shaped/"+c.name, func(b *testing.B) {
			b.SetBytes(int64(len(synth.doc)))
			b.ReportAllocs()
			for b.Loop() {
				if err := c.decode(synth.doc, synth.hash); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSynthGetBlock3 pins the synthetic reply the benchmark decodes: both
// decoders read it to the block it was made from.
func TestSynthGetBlock3(t *testing.T) {
	s := synthGetBlock3(t, 300, 2)
	fb, err := decodeGetBlock3(s.doc, s.hash)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fb.Raw, s.raw) || !nodetest.EqualScripts(fb.PrevScripts, s.prev) {
		t.Fatal("streaming decoder: block or prevouts differ")
	}
	blk, prev, err := parseVerboseBlockReference(s.doc, s.hash)
	if err != nil || !bytes.Equal(serializeBlock(t, blk), s.raw) || !nodetest.EqualScripts(prev, s.prev) {
		t.Fatalf("reference decoder: %v", err)
	}
	if perTx := len(s.doc) / 300; perTx < 1500 {
		t.Errorf("%d bytes of JSON a transaction; Core's replies carry 2-3 KB", perTx)
	}
}

// synthBlock is a synthetic getblock 3 reply and the block it describes.
type synthBlock struct {
	doc  []byte
	hash chainhash.Hash
	raw  []byte
	prev [][]byte
}

// synthKind is an output template of the synthetic block: its script
// size, Core's type name, and the witness a spend of it carries.
type synthKind struct {
	name      string
	script    func(r *rand.Rand) []byte
	witness   []int // item sizes
	scriptSig int
}

var synthKinds = []struct {
	share float64
	kind  synthKind
}{
	{0.46, synthKind{"witness_v0_keyhash", func(r *rand.Rand) []byte { return append([]byte{0, 20}, randBytes(r, 20)...) }, []int{72, 33}, 0}},
	{0.27, synthKind{"witness_v1_taproot", func(r *rand.Rand) []byte { return append([]byte{0x51, 32}, randBytes(r, 32)...) }, []int{64}, 0}},
	{0.09, synthKind{"scripthash", func(r *rand.Rand) []byte { return append(append([]byte{0xa9, 20}, randBytes(r, 20)...), 0x87) }, []int{72, 33}, 23}},
	{0.09, synthKind{"pubkeyhash", func(r *rand.Rand) []byte {
		return append(append([]byte{0x76, 0xa9, 20}, randBytes(r, 20)...), 0x88, 0xac)
	}, nil, 106}},
	{0.04, synthKind{"witness_v0_scripthash", func(r *rand.Rand) []byte { return append([]byte{0, 32}, randBytes(r, 32)...) }, []int{0, 72, 72, 105}, 0}},
	{0.05, synthKind{"nulldata", func(r *rand.Rand) []byte { return append([]byte{0x6a, 20}, randBytes(r, 20)...) }, nil, 0}},
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func pickKind(r *rand.Rand, spendable bool) synthKind {
	for {
		u := r.Float64()
		for _, k := range synthKinds {
			if u < k.share {
				if spendable && k.kind.name == "nulldata" {
					break
				}
				return k.kind
			}
			u -= k.share
		}
	}
}

// synthGetBlock3 builds a block of n transactions besides the coinbase
// (1-2 inputs, 2 outputs mostly, mainnet's script mix) and renders the
// getblock 3 reply Core would send for it.
func synthGetBlock3(tb testing.TB, n int, seed uint64) synthBlock {
	tb.Helper()
	r := rand.New(rand.NewPCG(seed, 0x67623362))
	var txs []*wire.MsgTx
	var prevKinds [][]synthKind
	var prevScripts [][][]byte
	cb := wire.NewMsgTx(2)
	cb.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Index: ^uint32(0)}, SignatureScript: []byte{3, 1, 2, 3}, Sequence: ^uint32(0), Witness: wire.TxWitness{make([]byte, 32)}})
	cb.AddTxOut(wire.NewTxOut(312_500_000, pickKind(r, true).script(r)))
	cb.AddTxOut(wire.NewTxOut(0, append([]byte{0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed}, randBytes(r, 32)...)))
	txs = append(txs, cb)
	prevKinds, prevScripts = append(prevKinds, nil), append(prevScripts, nil)
	for range n {
		tx := wire.NewMsgTx(2)
		nIn := 1 + r.IntN(2)
		var kinds []synthKind
		var scripts [][]byte
		for range nIn {
			k := pickKind(r, true)
			in := &wire.TxIn{Sequence: 0xfffffffd}
			copy(in.PreviousOutPoint.Hash[:], randBytes(r, 32))
			in.PreviousOutPoint.Index = uint32(r.IntN(3))
			if k.scriptSig > 0 {
				in.SignatureScript = randBytes(r, k.scriptSig)
			}
			for _, size := range k.witness {
				in.Witness = append(in.Witness, randBytes(r, size))
			}
			tx.AddTxIn(in)
			kinds = append(kinds, k)
			scripts = append(scripts, k.script(r))
		}
		for range 1 + r.IntN(2) {
			k := pickKind(r, false)
			v := int64(0)
			if k.name != "nulldata" {
				v = 1000 + r.Int64N(1e8)
			}
			tx.AddTxOut(wire.NewTxOut(v, k.script(r)))
		}
		txs = append(txs, tx)
		prevKinds, prevScripts = append(prevKinds, kinds), append(prevScripts, scripts)
	}
	txids := make([]chainhash.Hash, len(txs))
	for i, tx := range txs {
		txids[i] = tx.TxHash()
	}
	blk := wire.MsgBlock{Header: wire.BlockHeader{Version: 0x20000000, MerkleRoot: wirescan.MerkleRoot(txids),
		Timestamp: time.Unix(1_750_000_000, 0), Bits: 0x17023a04, Nonce: 7}, Transactions: txs}
	copy(blk.Header.PrevBlock[:], randBytes(r, 32))
	var raw bytes.Buffer
	if err := blk.Serialize(&raw); err != nil {
		tb.Fatal(err)
	}
	s := synthBlock{hash: blk.BlockHash(), raw: raw.Bytes()}
	for _, scripts := range prevScripts {
		s.prev = append(s.prev, scripts...)
	}
	s.doc = renderGetBlock3(r, &blk, prevKinds, prevScripts)
	return s
}

// renderGetBlock3 writes a block as Core's getblock 3 does (member order
// and kinds of members as in the recorded v31 replies; asm and
// descriptors are stand-ins of realistic length).
func renderGetBlock3(r *rand.Rand, blk *wire.MsgBlock, prevKinds [][]synthKind, prevScripts [][][]byte) []byte {
	var b strings.Builder
	q := func(s string) string { out, _ := json.Marshal(s); return string(out) }
	spk := func(script []byte, kind string) string {
		h := hex.EncodeToString(script)
		addr := ""
		if kind != "nulldata" {
			addr = `,"address":` + q("bc1q"+h[:min(len(h), 58)])
		}
		return fmt.Sprintf(`{"asm":%s,"desc":%s,"hex":"%s"%s,"type":"%s"}`,
			q("0 "+h), q("addr("+h+")#abcdefgh"), h, addr, kind)
	}
	kindOf := func(script []byte) string {
		switch {
		case script[0] == 0x6a:
			return "nulldata"
		case script[0] == 0x51:
			return "witness_v1_taproot"
		case script[0] == 0 && len(script) == 22:
			return "witness_v0_keyhash"
		case script[0] == 0:
			return "witness_v0_scripthash"
		case script[0] == 0xa9:
			return "scripthash"
		}
		return "pubkeyhash"
	}
	h := blk.Header
	fmt.Fprintf(&b, `{"hash":"%s","confirmations":1,"height":900000,"version":%d,"versionHex":"%08x","merkleroot":"%s","time":%d,"mediantime":%d,"nonce":%d,"bits":"%08x","target":"00000000000000000002a4040000000000000000000000000000000000000000","difficulty":126982285146989.3,"chainwork":"0000000000000000000000000000000000000000b1e0d9c8b7a6f5e4d3c2b1a0","nTx":%d,"previousblockhash":"%s","strippedsize":%d,"size":%d,"weight":%d,"tx":[`,
		blk.BlockHash(), h.Version, uint32(h.Version), h.MerkleRoot, h.Timestamp.Unix(), h.Timestamp.Unix()-3000, h.Nonce, h.Bits,
		len(blk.Transactions), h.PrevBlock, blk.SerializeSizeStripped(), blk.SerializeSize(), 3*blk.SerializeSizeStripped()+blk.SerializeSize())
	for i, tx := range blk.Transactions {
		if i > 0 {
			b.WriteByte(',')
		}
		var raw bytes.Buffer
		_ = tx.Serialize(&raw)
		fmt.Fprintf(&b, `{"txid":"%s","hash":"%s","version":%d,"size":%d,"vsize":%d,"weight":%d,"locktime":%d,"vin":[`,
			tx.TxHash(), tx.WitnessHash(), tx.Version, tx.SerializeSize(), (3*tx.SerializeSizeStripped()+tx.SerializeSize()+3)/4,
			3*tx.SerializeSizeStripped()+tx.SerializeSize(), tx.LockTime)
		for j, in := range tx.TxIn {
			if j > 0 {
				b.WriteByte(',')
			}
			wit := make([]string, len(in.Witness))
			for k, w := range in.Witness {
				wit[k] = hex.EncodeToString(w)
			}
			witJSON, _ := json.Marshal(wit)
			if i == 0 {
				fmt.Fprintf(&b, `{"coinbase":"%x","txinwitness":%s,"sequence":%d}`, in.SignatureScript, witJSON, in.Sequence)
				continue
			}
			script := prevScripts[i][j]
			fmt.Fprintf(&b, `{"txid":"%s","vout":%d,"scriptSig":{"asm":%s,"hex":"%x"},"txinwitness":%s,"prevout":{"generated":false,"height":%d,"value":%d.%08d,"scriptPubKey":%s},"sequence":%d}`,
				in.PreviousOutPoint.Hash, in.PreviousOutPoint.Index, q(hex.EncodeToString(in.SignatureScript)), in.SignatureScript, witJSON,
				899000+r.IntN(1000), r.IntN(3), r.IntN(1e8), spk(script, prevKinds[i][j].name), in.Sequence)
		}
		b.WriteString(`],"vout":[`)
		for j, out := range tx.TxOut {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"value":%d.%08d,"n":%d,"scriptPubKey":%s}`, out.Value/1e8, out.Value%1e8, j, spk(out.PkScript, kindOf(out.PkScript)))
		}
		b.WriteString(`]`)
		if i > 0 {
			fmt.Fprintf(&b, `,"fee":0.0000%04d`, 1000+r.IntN(9000))
		}
		fmt.Fprintf(&b, `,"hex":"%x"}`, raw.Bytes())
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}
