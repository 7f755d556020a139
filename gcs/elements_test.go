package gcs_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/gcs"
	"github.com/cfindexd/cfindexd/internal/testvectors"
)

// basicElements is a deliberately plain reference for BIP-158's element rule,
// written from the BIP's text: outputs except empty/OP_RETURN, then spent
// scripts except empty. It allocates freely.
func basicElements(block *wire.MsgBlock, prevScripts [][]byte) [][]byte {
	var out [][]byte
	for _, tx := range block.Transactions {
		for _, o := range tx.TxOut {
			if len(o.PkScript) > 0 && o.PkScript[0] != 0x6a {
				out = append(out, o.PkScript)
			}
		}
	}
	for _, s := range prevScripts {
		if len(s) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// vectorAt returns the BIP-158 vector at height; the element tests start
// from real blocks and change one thing at a time.
func vectorAt(t *testing.T, height uint32) testvectors.BIP158 {
	t.Helper()
	for _, v := range testvectors.LoadBIP158(t) {
		if v.Height == height {
			return v
		}
	}
	t.Fatalf("no BIP-158 vector at height %d", height)
	return testvectors.BIP158{}
}

func buildWith(t *testing.T, block *wire.MsgBlock, prevScripts [][]byte) []byte {
	t.Helper()
	var b gcs.BasicBuilder
	if err := gcs.AddBasicElements(&b, block, prevScripts); err != nil {
		t.Fatalf("AddBasicElements: %v", err)
	}
	return b.AppendFilter(nil, block.BlockHash())
}

// TestAddBasicElementsRules pins each BIP-158 inclusion rule on a real block
// (testnet 49291: coinbase plus one transaction with eight inputs), changed
// one rule at a time: the filter must equal the one built from the expected
// element list, and say whether the probe element is in it.
func TestAddBasicElementsRules(t *testing.T) {
	base := vectorAt(t, 49291)
	spender := 1 // the non-coinbase transaction

	tests := []struct {
		name   string
		mutate func(b *wire.MsgBlock, prev [][]byte) [][]byte
		probe  []byte // element whose membership is the point of the case
		inSet  bool
	}{
		{
			name: "OP_RETURN output is excluded",
			mutate: func(b *wire.MsgBlock, prev [][]byte) [][]byte {
				b.Transactions[spender].AddTxOut(wire.NewTxOut(0, []byte{0x6a, 0x04, 'c', 'f', 'i', 'x'}))
				return prev
			},
			probe: []byte{0x6a, 0x04, 'c', 'f', 'i', 'x'},
		},
		{
			name: "bare OP_RETURN in the coinbase is excluded",
			mutate: func(b *wire.MsgBlock, prev [][]byte) [][]byte {
				b.Transactions[0].AddTxOut(wire.NewTxOut(0, []byte{0x6a}))
				return prev
			},
			probe: []byte{0x6a},
		},
		{
			name: "OP_RETURN followed by garbage opcodes is excluded",
			mutate: func(b *wire.MsgBlock, prev [][]byte) [][]byte {
				b.Transactions[spender].AddTxOut(wire.NewTxOut(0, []byte{0x6a, 0xff, 0x4e, 0x01}))
				return prev
			},
			probe: []byte{0x6a, 0xff, 0x4e, 0x01},
		},
		{
			name: "OP_RETURN not first byte is included",
			mutate: func(b *wire.MsgBlock, prev [][]byte) [][]byte {
				b.Transactions[spender].AddTxOut(wire.NewTxOut(0, []byte{0x51, 0x6a}))
				return prev
			},
			probe: []byte{0x51, 0x6a},
			inSet: true,
		},
		{
			name: "spent OP_RETURN-prefixed script is included",
			mutate: func(b *wire.MsgBlock, prev [][]byte) [][]byte {
				prev[3] = []byte{0x6a, 0x01, 0x02}
				return prev
			},
			probe: []byte{0x6a, 0x01, 0x02},
			inSet: true,
		},
		{
			name: "coinbase output is included",
			mutate: func(b *wire.MsgBlock, prev [][]byte) [][]byte {
				b.Transactions[0].TxOut[0].PkScript = []byte{0x00, 0x14, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
				return prev
			},
			probe: []byte{0x00, 0x14, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20},
			inSet: true,
		},
		{
			name: "empty spent script is skipped",
			mutate: func(b *wire.MsgBlock, prev [][]byte) [][]byte {
				prev[0], prev[5] = nil, []byte{}
				return prev
			},
			probe: prevScriptOf(base, 0),
			inSet: false,
		},
		{
			name: "duplicate of an output among spent scripts is de-duplicated",
			mutate: func(b *wire.MsgBlock, prev [][]byte) [][]byte {
				prev[2] = b.Transactions[0].TxOut[0].PkScript
				return prev
			},
			probe: base.Block.Transactions[0].TxOut[0].PkScript,
			inSet: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			block := base.Block.Copy()
			prev := tc.mutate(block, cloneScripts(base.PrevScripts))
			hash := block.BlockHash()

			got := buildWith(t, block, prev)
			want := gcs.BuildBasic(hash, basicElements(block, prev))
			if !bytes.Equal(got, want) {
				t.Fatalf("filter %x, want %x (built from the reference element list)", got, want)
			}
			n := distinct(basicElements(block, prev))
			if f, err := gcs.NewFilterWithN(gcs.Params{P: gcs.BasicP, M: gcs.BasicM}, got); err != nil || f.N() != uint32(n) {
				t.Fatalf("filter N: %v, %v; want %d distinct elements", f, err, n)
			}
			in, err := gcs.MatchBasic(got, hash, [][]byte{tc.probe})
			if err != nil {
				t.Fatalf("MatchBasic: %v", err)
			}
			// A GCS may report false positives (rate 1/M), never false
			// negatives; the probes here are fixed, so a false positive
			// would be deterministic and visible.
			if in != tc.inSet {
				t.Fatalf("probe %x in filter = %v, want %v", tc.probe, in, tc.inSet)
			}
		})
	}
}

func prevScriptOf(v testvectors.BIP158, i int) []byte { return v.PrevScripts[i] }

func cloneScripts(in [][]byte) [][]byte {
	out := make([][]byte, len(in))
	for i, s := range in {
		out[i] = bytes.Clone(s)
	}
	return out
}

func distinct(els [][]byte) int {
	seen := make(map[string]struct{}, len(els))
	for _, e := range els {
		seen[string(e)] = struct{}{}
	}
	return len(seen)
}

// TestAddBasicElementsPrevScriptCount checks the spent-script count against
// the non-coinbase inputs, and that a mismatch leaves the builder untouched.
func TestAddBasicElementsPrevScriptCount(t *testing.T) {
	spending := vectorAt(t, 49291) // coinbase + 8 inputs
	coinbaseOnly := vectorAt(t, 2) // coinbase only
	noTxs := &wire.MsgBlock{Header: coinbaseOnly.Block.Header}

	tests := []struct {
		name    string
		block   *wire.MsgBlock
		prev    [][]byte
		wantErr bool
	}{
		{"exact count", spending.Block, spending.PrevScripts, false},
		{"one short", spending.Block, spending.PrevScripts[:7], true},
		{"one extra", spending.Block, append(cloneScripts(spending.PrevScripts), []byte{0x51}), true},
		{"none given", spending.Block, nil, true},
		{"coinbase input needs no script", coinbaseOnly.Block, nil, false},
		{"script given for the coinbase input", coinbaseOnly.Block, [][]byte{{0x51}}, true},
		{"block without transactions", noTxs, nil, false},
		{"block without transactions, one script", noTxs, [][]byte{{0x51}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b gcs.BasicBuilder
			err := gcs.AddBasicElements(&b, tc.block, tc.prev)
			if tc.wantErr != errors.Is(err, gcs.ErrPrevScriptCount) || (!tc.wantErr && err != nil) {
				t.Fatalf("err = %v, want gcs.ErrPrevScriptCount: %v", err, tc.wantErr)
			}
			if !tc.wantErr {
				return
			}
			hash := tc.block.BlockHash()
			if got, empty := b.AppendFilter(nil, hash), gcs.BuildBasic(hash, nil); !bytes.Equal(got, empty) {
				t.Fatalf("builder holds elements after a rejected block: %x", got)
			}
		})
	}
}

// TestAddBasicElementsDoesNotAllocate pins the steady-state promise: with a
// warmed-up builder, feeding a real block with spends allocates nothing.
func TestAddBasicElementsDoesNotAllocate(t *testing.T) {
	v := vectorAt(t, 926485)
	var b gcs.BasicBuilder
	run := func() {
		b.Reset()
		if err := gcs.AddBasicElements(&b, v.Block, v.PrevScripts); err != nil {
			t.Fatal(err)
		}
	}
	run() // grow the builder's arena once
	if allocs := testing.AllocsPerRun(200, run); allocs != 0 {
		t.Fatalf("AddBasicElements allocates %v times per block in steady state", allocs)
	}
}

// BenchmarkAddBasicElements measures extraction alone and extraction plus
// filter construction on the same block, so one run shows the ratio.
func BenchmarkAddBasicElements(b *testing.B) {
	v := testvectors.LoadBIP158(b)[6] // testnet 926485, the largest vector block
	var builder gcs.BasicBuilder
	var buf []byte
	b.Run("extract", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			builder.Reset()
			_ = gcs.AddBasicElements(&builder, v.Block, v.PrevScripts)
		}
	})
	b.Run("extract+build", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			builder.Reset()
			_ = gcs.AddBasicElements(&builder, v.Block, v.PrevScripts)
			buf = builder.AppendFilter(buf[:0], v.BlockHash)
		}
	})
}

// FuzzAddBasicElements is a differential fuzz target: for any block the wire
// decoder accepts and any spent scripts, the filter AddBasicElements feeds
// must equal the one built from the plain reference element list, and a
// count that is off by one must be refused.
func FuzzAddBasicElements(f *testing.F) {
	for _, v := range testvectors.LoadBIP158(f) {
		var blk bytes.Buffer
		if err := v.Block.Serialize(&blk); err != nil {
			f.Fatal(err)
		}
		f.Add(blk.Bytes(), bytes.Join(v.PrevScripts, []byte{0}))
	}
	f.Fuzz(func(t *testing.T, rawBlock, scriptPool []byte) {
		var block wire.MsgBlock
		if err := block.Deserialize(bytes.NewReader(rawBlock)); err != nil {
			return
		}
		inputs := 0
		if len(block.Transactions) > 1 {
			for _, tx := range block.Transactions[1:] {
				inputs += len(tx.TxIn)
			}
		}
		// Cut the pool into one script per input at 0x00 bytes, cycling;
		// empty scripts (adjacent separators) are part of the point.
		pieces := bytes.Split(scriptPool, []byte{0})
		prev := make([][]byte, inputs)
		for i := range prev {
			prev[i] = pieces[i%len(pieces)]
		}

		hash := block.BlockHash()
		var b gcs.BasicBuilder
		if err := gcs.AddBasicElements(&b, &block, prev); err != nil {
			t.Fatalf("AddBasicElements: %v", err)
		}
		got := b.AppendFilter(nil, hash)
		if want := gcs.BuildBasic(hash, basicElements(&block, prev)); !bytes.Equal(got, want) {
			t.Fatalf("filter %x, reference %x", got, want)
		}

		b.Reset()
		if err := gcs.AddBasicElements(&b, &block, append(prev, nil)); !errors.Is(err, gcs.ErrPrevScriptCount) {
			t.Fatalf("one script too many: err = %v", err)
		}
	})
}
