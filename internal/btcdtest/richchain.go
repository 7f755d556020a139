package btcdtest

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

const (
	// richWorkValue is the value of each output the funding tx of a block
	// creates for the next block to spend.
	richWorkValue = 100_000
	// richSinkValue is the value of the outputs spend txs create (above
	// btcd's dust limit for every standard kind).
	richSinkValue = 10_000
	// MaxActivationRounds bounds how many 100-block BIP-9 windows we mine
	// waiting for segwit and taproot on simnet.
	MaxActivationRounds = 6
)

// workKinds are the outputs each block's funding tx creates, in output
// order. P2PKH and P2TR appear twice: the P2PKH pair shares one script, so
// the next block spends the same script twice.
var workKinds = []Kind{
	KindP2PKH, KindP2PKH, KindP2WPKH, KindP2TR, KindP2TR,
	KindP2SHP2WPKH, KindP2SHMultisig, KindP2WSH, KindP2PK, KindBareMultisig,
}

// BuildTxRichChain mines blocks tx-rich blocks on n, funded by w. It mines
// every block itself (MineBlockOn's miner, submitted with submitblock) with
// coinbases paying w's mining script and claiming subsidy plus fees, so w
// needs no relation to the node's --miningaddr and, on a fresh node, the
// whole chain's transactions (coinbases included) depend only on w's seed;
// only block timestamps, hence block hashes, vary. Block times are
// max(now, median-time-past+1s), as btcd's own miner does.
//
// First it mines empty blocks until w has a mature coinbase (100 blocks on
// a fresh chain: the coinbase of block 1 can be spent in block 101) and, on
// simnet, until segwit and taproot are active. Then every block holds,
// besides its coinbase:
//
//   - a funding tx spending a mature coinbase (P2PKH) into one output of
//     every kind: P2PKH (twice, same script), P2WPKH, P2TR (twice), P2SH-P2WPKH,
//     P2SH 1-of-1 multisig, P2WSH, P2PK, bare 1-of-2 multisig, OP_RETURN,
//     and P2WPKH change;
//   - from the second block on, four txs spending the previous block's
//     funding outputs (so each block spends P2PKH, P2WPKH, P2TR key path,
//     both P2SH kinds, P2WSH, P2PK and bare multisig), paying again to every
//     kind, with repeated scripts inside a tx, across txs, and between a
//     spent prevout and a new output, to exercise filter de-duplication.
//
// Every transaction first passes btcd's mempool policy (sendrawtransaction);
// each block must become btcd's tip. On error the chain may have advanced
// past what w has seen; w.Sync catches up.
func BuildTxRichChain(ctx context.Context, n *Node, w *Wallet, blocks int) error {
	if err := w.Sync(ctx, n); err != nil {
		return fmt.Errorf("build tx-rich chain: %w", err)
	}
	b, err := newRichBuilder(ctx, n, w)
	if err != nil {
		return fmt.Errorf("build tx-rich chain: %w", err)
	}
	if err := b.prepare(ctx); err != nil {
		return fmt.Errorf("build tx-rich chain: %w", err)
	}
	if err := b.mineRich(ctx, blocks); err != nil {
		return fmt.Errorf("build tx-rich chain: %w", err)
	}
	return nil
}

// richBuilder mines on top of the wallet's tip and carries the funding
// outputs of one block to the next.
type richBuilder struct {
	n      *Node
	w      *Wallet
	tip    chainhash.Hash
	height int32
	times  []time.Time // timestamps of the last (up to) 11 blocks
	work   []UTXO      // last funding tx's outputs, in workKinds order
	serial uint32      // OP_RETURN counter within a block
}

// richTxs are the transactions of one tx-rich block.
type richTxs struct {
	height int32
	txs    []*wire.MsgTx
	fees   int64
}

func newRichBuilder(ctx context.Context, n *Node, w *Wallet) (*richBuilder, error) {
	w.mu.Lock()
	b := &richBuilder{n: n, w: w, height: int32(len(w.synced)) - 1}
	b.tip = w.synced[b.height]
	w.mu.Unlock()
	hash := b.tip
	for range MedianTimeBlocks {
		hdr, height, err := n.BlockHeader(ctx, hash)
		if err != nil {
			return nil, err
		}
		b.times = append([]time.Time{hdr.Timestamp}, b.times...)
		if height == 0 {
			break
		}
		hash = hdr.PrevBlock
	}
	return b, nil
}

// MedianTimeBlocks is how many blocks median-time-past looks at.
const MedianTimeBlocks = 11

// nextTime is max(now, median-time-past + 1s).
func (b *richBuilder) nextTime() time.Time { return NextBlockTime(b.times) }

// fundingNeed bounds what one funding tx spends.
func fundingNeed() int64 {
	return int64(len(workKinds))*richWorkValue + 10*dustLimit
}

// prepare mines empty blocks until the wallet can fund a block and segwit
// and taproot are active for the next block.
func (b *richBuilder) prepare(ctx context.Context) error {
	limit := int(b.n.params.CoinbaseMaturity) + MaxActivationRounds*int(b.n.params.MinerConfirmationWindow)
	for range limit {
		next := b.height + 1
		b.w.mu.Lock()
		funded := b.w.findLocked(KindP2PKH, fundingNeed(), next) != nil ||
			b.w.findLocked(KindP2WPKH, fundingNeed(), next) != nil
		b.w.mu.Unlock()
		if funded {
			active, err := b.n.SoftforksActive(ctx, "segwit", "taproot")
			if err != nil || active {
				return err
			}
		}
		if err := b.submit(ctx, nil, 0); err != nil {
			return err
		}
	}
	return fmt.Errorf("no mature funds or segwit/taproot inactive after %d blocks", limit)
}

// submit mines txs (paying fees in total) on the tip, hands btcd the block
// and connects it to the wallet once it is btcd's tip.
func (b *richBuilder) submit(ctx context.Context, txs []*wire.MsgTx, fees int64) error {
	blk := b.nextBlock(txs, fees)
	if err := b.submitBlock(ctx, blk); err != nil {
		return err
	}
	return b.connect(blk)
}

// nextBlock assembles and solves the block on the tip.
func (b *richBuilder) nextBlock(txs []*wire.MsgTx, fees int64) *wire.MsgBlock {
	return BuildBlock(b.n.params, b.tip, b.height+1, b.nextTime(), txs, b.w.MiningScript(), fees)
}

// relay hands btcd txs in one batch of sendrawtransaction, so each passes
// mempool policy.
func (b *richBuilder) relay(ctx context.Context, txs []*wire.MsgTx) error {
	calls := make([]batchCall, 0, len(txs))
	for _, tx := range txs {
		calls = append(calls, batchCall{method: "sendrawtransaction", params: []any{txHex(tx)}})
	}
	if err := b.n.batch(ctx, calls); err != nil {
		return err
	}
	for i, c := range calls {
		if c.err != nil {
			return fmt.Errorf("tx %s: %w", txs[i].TxHash(), c.err)
		}
	}
	return nil
}

// submitBlock hands btcd blk and checks, in the same batch, that it became
// the tip.
func (b *richBuilder) submitBlock(ctx context.Context, blk *wire.MsgBlock) error {
	if err := b.n.SubmitAsTip(ctx, blk); err != nil {
		return fmt.Errorf("height %d: %w", b.height+1, err)
	}
	return nil
}

// connect records blk, now btcd's tip, as the builder's and wallet's tip.
func (b *richBuilder) connect(blk *wire.MsgBlock) error {
	if err := b.w.ConnectBlock(blk, b.height+1); err != nil {
		return err
	}
	b.tip, b.height = blk.BlockHash(), b.height+1
	b.times = append(b.times, blk.Header.Timestamp)
	if len(b.times) > MedianTimeBlocks {
		b.times = b.times[1:]
	}
	return nil
}

// mineRich mines count tx-rich blocks. It builds and signs the next
// block's transactions while btcd validates the current block, so the
// harness's signing and btcd's validation use both cores.
func (b *richBuilder) mineRich(ctx context.Context, count int) error {
	if count <= 0 {
		return nil
	}
	next, err := b.buildTxs(b.height + 1)
	if err != nil {
		return err
	}
	for i := range count {
		cur := next
		next = nil
		if err := b.relay(ctx, cur.txs); err != nil {
			b.release(cur)
			return fmt.Errorf("block %d of %d: %w", i+1, count, err)
		}
		blk := b.nextBlock(cur.txs, cur.fees)
		var nextErr error
		done := make(chan struct{})
		if i+1 < count {
			go func() {
				defer close(done)
				next, nextErr = b.buildTxs(cur.height + 1)
			}()
		} else {
			close(done)
		}
		err := b.submitBlock(ctx, blk)
		<-done
		if err == nil {
			err = b.connect(blk)
		}
		if err == nil {
			err = nextErr
		}
		if err != nil {
			b.release(cur)
			b.release(next)
			return fmt.Errorf("block %d of %d: %w", i+1, count, err)
		}
	}
	return nil
}

// release un-reserves the inputs of txs that were not mined.
func (b *richBuilder) release(r *richTxs) {
	if r == nil {
		return
	}
	for _, tx := range r.txs {
		b.w.Release(tx)
	}
}

// buildTxs builds the funding tx of the block at height and, given the
// previous funding tx's outputs (which need not be connected yet), its
// spend txs. It holds the wallet lock throughout.
func (b *richBuilder) buildTxs(height int32) (*richTxs, error) {
	w := b.w
	w.mu.Lock()
	defer w.mu.Unlock()
	b.serial = 0
	r := &richTxs{height: height}
	fund, fee, err := b.fundingTxLocked(height)
	if err != nil {
		return nil, err
	}
	r.txs = append(r.txs, fund)
	r.fees += fee
	if b.work != nil {
		spends, fees, err := b.spendTxsLocked(height)
		if err != nil {
			return nil, err
		}
		r.txs = append(r.txs, spends...)
		r.fees += fees
	}
	fundID := fund.TxHash()
	b.work = b.work[:0]
	for i, k := range workKinds {
		out := fund.TxOut[i]
		b.work = append(b.work, UTXO{OutPoint: wire.OutPoint{Hash: fundID, Index: uint32(i)},
			Value: out.Value, PkScript: out.PkScript, Kind: k, Height: height})
	}
	return r, nil
}

// fundingTxLocked spends a mature coinbase (or, once subsidies have halved
// too far, the largest-enough P2WPKH change) into the next block's work
// outputs.
func (b *richBuilder) fundingTxLocked(height int32) (*wire.MsgTx, int64, error) {
	w := b.w
	var outs []*wire.TxOut
	var shared []byte
	for i, k := range workKinds {
		var script []byte
		switch {
		case i == 1:
			script = shared // second P2PKH: same script as the first
		default:
			s, err := b.newScriptLocked(k)
			if err != nil {
				return nil, 0, err
			}
			script = s
		}
		if i == 0 {
			shared = script
		}
		outs = append(outs, wire.NewTxOut(richWorkValue, script))
	}
	opReturn, err := b.nullDataLocked(height)
	if err != nil {
		return nil, 0, err
	}
	outs = append(outs, opReturn)
	change, err := b.newScriptLocked(KindP2WPKH)
	if err != nil {
		return nil, 0, err
	}
	need := fundingNeed()
	in, ok := w.takeLocked(KindP2PKH, need, height)
	if !ok {
		if in, ok = w.takeLocked(KindP2WPKH, need, height); !ok {
			return nil, 0, fmt.Errorf("funding %d sat: %w", need, ErrInsufficientFunds)
		}
	}
	return w.buildTxLocked([]UTXO{in}, outs, change, DefaultFeeRate)
}

// spendTxsLocked spends the previous block's work outputs in four txs.
func (b *richBuilder) spendTxsLocked(height int32) ([]*wire.MsgTx, int64, error) {
	w := b.w
	work := b.work
	for _, u := range work {
		if w.pending[u.OutPoint] || u.Height >= height {
			return nil, 0, fmt.Errorf("work output %v (%v) is reserved or not yet mined", u.OutPoint, u.Kind)
		}
	}
	sharedP2PKH := work[0].PkScript
	var sharedP2WSH []byte
	plans := []struct {
		ins    []int  // indexes into work
		outs   []Kind // fresh scripts, richSinkValue each
		change Kind
	}{
		// P2PKH, P2WPKH and P2TR in one tx: the taproot sighash commits
		// to all three prevouts.
		{ins: []int{0, 2, 3}, outs: []Kind{KindP2WSH, KindP2PK}, change: KindP2TR},
		// Both P2SH kinds plus the second spend of the shared P2PKH
		// script; change goes back to that script.
		{ins: []int{5, 6, 1}, outs: []Kind{KindBareMultisig, KindP2SHMultisig, KindNullData}},
		{ins: []int{7, 8, 9}, outs: []Kind{KindP2WPKH, KindP2TR, KindP2PKH}, change: KindP2SHP2WPKH},
		// Taproot-only tx paying one script twice and the P2WSH sink of
		// the first tx again.
		{ins: []int{4}, outs: []Kind{KindP2WPKH}, change: KindP2TR},
	}
	txs := make([]*wire.MsgTx, 0, len(plans))
	var fees int64
	for p, plan := range plans {
		ins := make([]UTXO, len(plan.ins))
		for i, idx := range plan.ins {
			ins[i] = work[idx]
		}
		var outs []*wire.TxOut
		for _, k := range plan.outs {
			if k == KindNullData {
				o, err := b.nullDataLocked(height)
				if err != nil {
					return nil, 0, err
				}
				outs = append(outs, o)
				continue
			}
			s, err := b.newScriptLocked(k)
			if err != nil {
				return nil, 0, err
			}
			if k == KindP2WSH && sharedP2WSH == nil {
				sharedP2WSH = s
			}
			outs = append(outs, wire.NewTxOut(richSinkValue, s))
		}
		var change []byte
		switch p {
		case 1:
			change = sharedP2PKH
		case 3:
			outs = append(outs, wire.NewTxOut(richSinkValue, outs[0].PkScript),
				wire.NewTxOut(richSinkValue, sharedP2WSH))
			fallthrough
		default:
			s, err := b.newScriptLocked(plan.change)
			if err != nil {
				return nil, 0, err
			}
			change = s
		}
		tx, fee, err := w.buildTxLocked(ins, outs, change, DefaultFeeRate)
		if err != nil {
			return nil, 0, err
		}
		txs = append(txs, tx)
		fees += fee
	}
	return txs, fees, nil
}

func (b *richBuilder) newScriptLocked(k Kind) ([]byte, error) {
	return b.w.newScriptLocked(k)
}

// nullDataLocked is a zero-value OP_RETURN output with a payload unique in
// the chain (height of the block being built, serial within it).
func (b *richBuilder) nullDataLocked(height int32) (*wire.TxOut, error) {
	b.serial++
	data := binary.BigEndian.AppendUint32([]byte("cfindexd/btcdtest "), uint32(height))
	data = binary.BigEndian.AppendUint32(data, b.serial)
	script, err := NullDataScript(data)
	if err != nil {
		return nil, err
	}
	return wire.NewTxOut(0, script), nil
}
