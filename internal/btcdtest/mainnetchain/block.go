package mainnetchain

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"golang.org/x/sync/errgroup"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
)

// buildTx lays out a transaction at index idx of the block at height
// spending ins and paying outs (the last one is the change), with an
// OP_RETURN if asked and a fee of feeRate sat/vbyte, and puts its
// spendable outputs into the pool as same-block outputs.
func (g *mainnetGen) buildTx(height int32, idx int, ins []genOut, parents []int32, outs []mixKind, opReturn bool, feeRate int64) *plannedTx {
	tx := wire.NewMsgTx(2)
	var sum int64
	vsize := int64(11)
	for _, in := range ins {
		tx.AddTxIn(&wire.TxIn{PreviousOutPoint: in.op, Sequence: wire.MaxTxInSequenceNum - 2})
		sum += in.value
		vsize += inputVSize[in.kind]
	}
	for _, k := range outs {
		vsize += outputVSize[k]
	}
	if opReturn {
		vsize += outputVSize[mixOpReturn]
	}
	avail := sum - feeRate*vsize
	if avail < minGenOutput {
		avail = sum - vsize // fall back to 1 sat/vbyte; planBlock keeps sum >= minGenInputs
	}
	// Payments take at most half of what is available, each between
	// 10,000 sat (or less when little is available) and an even share of
	// that half; the change takes the rest.
	per := int64(0)
	if len(outs) > 1 {
		per = avail / int64(2*(len(outs)-1))
	}
	if per < minGenOutput {
		outs = outs[len(outs)-1:] // a sweep: everything to one output
	}
	values := make([]int64, len(outs))
	left := avail
	for i := range len(outs) - 1 {
		values[i] = logUniform(g.rng, min(10_000, per), per)
		left -= values[i]
	}
	values[len(outs)-1] = left
	p := &plannedTx{tx: tx, ins: ins, parents: parents}
	for _, par := range parents {
		if par >= 0 {
			// A same-block parent's wave is known: it was planned earlier.
			p.wave = max(p.wave, g.pendingWave(par)+1)
		}
	}
	if opReturn && g.rng.IntN(2) == 0 {
		tx.AddTxOut(wire.NewTxOut(0, opReturnScript(g.rng, 8+g.rng.IntN(68))))
		opReturn = false
	}
	for i, k := range outs {
		key := g.keys.take(k.keys())
		vout := uint32(len(tx.TxOut))
		tx.AddTxOut(wire.NewTxOut(values[i], mixScript(g.keys, k, key)))
		g.addToPool(genOut{op: wire.OutPoint{Index: vout}, value: values[i], key: key, height: height, blockTx: int32(idx), kind: k})
		if g.firstRich > 0 { // the rich blocks' outputs only
			g.stats.OutputKinds[k.String()]++
		}
	}
	if opReturn {
		tx.AddTxOut(wire.NewTxOut(0, opReturnScript(g.rng, 8+g.rng.IntN(68))))
	}
	if len(tx.TxOut) > len(outs) && g.firstRich > 0 {
		g.stats.OutputKinds[mixOpReturn.String()]++
	}
	g.waves = append(g.waves, p.wave)
	return p
}

// maxBlockWeight is BIP-141's consensus limit.
const maxBlockWeight = 4_000_000

// minGenOutput is the smallest value the generator pays to an output;
// minGenInputs the least a transaction spends (more inputs are added
// until it does), enough for a fee and an output.
const (
	minGenOutput = 1_000
	minGenInputs = 8_000
)

// pendingWave is the signing wave of transaction idx of the block being
// built.
func (g *mainnetGen) pendingWave(idx int32) int { return g.waves[idx] }

// finishBlock signs txs (same-block parents first), fixes the txids of the
// block's outputs in the pool, and assembles and solves the block at
// height. rich blocks count towards the statistics.
func (g *mainnetGen) finishBlock(height int32, txs []*plannedTx, rich bool) (*wire.MsgBlock, error) {
	defer func() { g.waves = g.waves[:0] }()
	if err := g.signAll(txs); err != nil {
		return nil, fmt.Errorf("mainnet-shaped chain: block %d: %w", height, err)
	}
	// Outputs of this block still in the pool learn their txids.
	txids := make([]chainhash.Hash, len(txs))
	for i, p := range txs {
		txids[i] = p.tx.TxHash()
	}
	if int(height) < len(g.pool) {
		for i := range g.pool[height] {
			o := &g.pool[height][i]
			if o.blockTx >= 0 {
				o.op.Hash = txids[o.blockTx]
				o.blockTx = -1
			}
		}
	}
	var fees int64
	msgs := make([]*wire.MsgTx, len(txs))
	for i, p := range txs {
		msgs[i] = p.tx
		var in, out int64
		for _, o := range p.ins {
			in += o.value
		}
		for _, o := range p.tx.TxOut {
			out += o.Value
		}
		fees += in - out
	}
	blk, err := g.assemble(msgs, fees)
	if err != nil {
		return nil, err
	}
	if rich {
		stripped, total := int64(blk.SerializeSizeStripped()), int64(blk.SerializeSize())
		weight := stripped*3 + total // BIP-141: base size × 4 + witness bytes
		if weight > maxBlockWeight {
			return nil, fmt.Errorf("mainnet-shaped chain: block %d weighs %d, over the limit %d: use fewer transactions a block", height, weight, maxBlockWeight)
		}
		g.stats.RichBytes += total
		g.stats.RichWeight += weight
	}
	return blk, nil
}

// signAll signs the planned transactions wave by wave on every core.
func (g *mainnetGen) signAll(txs []*plannedTx) error {
	maxWave := 0
	for _, p := range txs {
		maxWave = max(maxWave, p.wave)
	}
	start := time.Now()
	defer func() { g.signWall += time.Since(start) }()
	signed := make([]chainhash.Hash, len(txs))
	workers := runtime.GOMAXPROCS(0)
	for wave := 0; wave <= maxWave; wave++ {
		var todo []int
		for i, p := range txs {
			if p.wave == wave {
				todo = append(todo, i)
			}
		}
		var eg errgroup.Group
		next := make(chan int)
		for range workers {
			eg.Go(func() error {
				var firstErr error
				for i := range next {
					if firstErr != nil {
						continue
					}
					p := txs[i]
					for j, par := range p.parents {
						if par >= 0 {
							p.tx.TxIn[j].PreviousOutPoint.Hash = signed[par]
							p.ins[j].op.Hash = signed[par]
						}
					}
					if err := signPlanned(g.keys, p); err != nil {
						firstErr = fmt.Errorf("tx %d: %w", i, err)
						continue
					}
					signed[i] = p.tx.TxHash()
				}
				return firstErr
			})
		}
		for _, i := range todo {
			next <- i
		}
		close(next)
		if err := eg.Wait(); err != nil {
			return err
		}
	}
	return nil
}

// assemble builds and solves the next block with txs, its coinbase paying
// subsidy plus fees to a fresh P2WPKH key, which joins the immature
// coinbases.
func (g *mainnetGen) assemble(txs []*wire.MsgTx, fees int64) (*wire.MsgBlock, error) {
	height := g.height + 1
	if height > maxChainHeight {
		return nil, fmt.Errorf("mainnet-shaped chain: height %d would cross simnet's first retarget (2016): use fewer blocks", height)
	}
	key := g.keys.take(1)
	script := mixScript(g.keys, mixP2WPKH, key)
	blk := btcdtest.BuildBlock(g.n.Params(), g.tip, height, btcdtest.NextBlockTime(g.times), txs, script, fees)
	cb := blk.Transactions[0]
	g.immature = append(g.immature, genOut{op: wire.OutPoint{Hash: cb.TxHash(), Index: 0}, value: cb.TxOut[0].Value,
		key: key, height: height, blockTx: -1, kind: mixP2WPKH})
	return blk, nil
}

// submit hands blk to btcd, waits for it to become the tip and records it
// as the generator's tip.
func (g *mainnetGen) submit(ctx context.Context, blk *wire.MsgBlock) error {
	if err := g.connect(blk); err != nil {
		return err
	}
	return g.n.SubmitAsTip(ctx, blk)
}

// connect records blk as the generator's tip and hands it to the sink.
func (g *mainnetGen) connect(blk *wire.MsgBlock) error {
	g.height++
	g.tip = blk.BlockHash()
	g.times = append(g.times, blk.Header.Timestamp)
	if len(g.times) > btcdtest.MedianTimeBlocks {
		g.times = g.times[1:]
	}
	return g.emit(g.height, blk)
}
