package main

import (
	"context"
	"fmt"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
)

const (
	// maturityBlocks are mined first so the wallet has a spendable coinbase.
	maturityBlocks = 101
	// defaultRichBlocks is -blocks: blocks with transactions.
	defaultRichBlocks = 300
	// demoConfirmations is how deep the demo transaction ends up.
	demoConfirmations = 6
	// demoValue is what the demo transaction pays the watched address.
	demoValue = 4_200_000
	// outputValue is the value of each output of the filler transactions.
	outputValue = 20_000
	// mineChunk bounds the blocks asked of the node in one RPC.
	mineChunk = 100
	// feeRate is the filler transactions' fee rate in sat/vbyte.
	feeRate = btcdtest.DefaultFeeRate
)

// fillerKinds are the scripts every tx-rich block pays to: P2PKH, both
// segwit versions, both P2SH kinds, P2WSH and P2PK (all standard for
// btcd and Core), plus an OP_RETURN added separately.
var fillerKinds = []btcdtest.Kind{
	btcdtest.KindP2PKH, btcdtest.KindP2WPKH, btcdtest.KindP2TR, btcdtest.KindP2SHP2WPKH,
	btcdtest.KindP2SHMultisig, btcdtest.KindP2WSH, btcdtest.KindP2PK,
}

// demoPayment is the transaction the light client must find.
type demoPayment struct {
	TxID      chainhash.Hash
	Address   address.Address
	Value     int64
	Height    int32
	BlockHash chainhash.Hash
}

// chainMiner mines through a regtestNode and keeps the node's wallet in
// step by connecting every block it mines.
type chainMiner struct {
	node   regtestNode
	wallet *btcdtest.Wallet
	// progress, when set, is told the blocks mined so far after every
	// mining call.
	progress func(mined int)
	mined    int
}

// demoChainBlocks is how many blocks mineDemoChain mines for richBlocks.
func demoChainBlocks(richBlocks int) int { return maturityBlocks + richBlocks + demoConfirmations }

// mineDemoChain mines maturityBlocks, then richBlocks blocks with
// transactions of every standard script kind, then the demo payment to a
// fresh P2WPKH address, buried under demoConfirmations-1 more blocks.
// progress (may be nil) hears the count of blocks mined as it grows.
func mineDemoChain(ctx context.Context, node regtestNode, richBlocks int, progress func(mined int)) (demoPayment, error) {
	m := &chainMiner{node: node, wallet: node.Wallet(), progress: progress}
	if err := m.catchUp(ctx); err != nil {
		return demoPayment{}, err
	}
	if err := m.mine(ctx, maturityBlocks); err != nil {
		return demoPayment{}, err
	}
	for i := 0; i < richBlocks; i++ {
		if err := m.fillBlock(ctx); err != nil {
			return demoPayment{}, fmt.Errorf("block with transactions %d: %w", i+1, err)
		}
		if err := m.mine(ctx, 1); err != nil {
			return demoPayment{}, err
		}
	}
	return m.pay(ctx)
}

// pay sends demoValue to a new P2WPKH script of the wallet, mines it and
// buries it.
func (m *chainMiner) pay(ctx context.Context) (demoPayment, error) {
	script, err := m.wallet.NewScript(btcdtest.KindP2WPKH)
	if err != nil {
		return demoPayment{}, err
	}
	addr, err := address.NewAddressWitnessPubKeyHash(script[2:], m.wallet.Params())
	if err != nil {
		return demoPayment{}, err
	}
	tx, err := m.wallet.Fund([]*wire.TxOut{wire.NewTxOut(demoValue, script)}, feeRate)
	if err != nil {
		return demoPayment{}, fmt.Errorf("demo payment: %w", err)
	}
	if err := m.send(ctx, tx); err != nil {
		return demoPayment{}, fmt.Errorf("demo payment: %w", err)
	}
	hashes, err := m.node.Mine(ctx, 1)
	if err != nil {
		return demoPayment{}, err
	}
	m.minedBlocks(1)
	if err := m.catchUp(ctx); err != nil {
		return demoPayment{}, err
	}
	blk, err := m.node.Client().GetRawBlock(ctx, hashes[0])
	if err != nil {
		return demoPayment{}, err
	}
	if !hasTx(blk, tx.TxHash()) {
		return demoPayment{}, fmt.Errorf("the node did not mine demo payment %s", tx.TxHash())
	}
	p := demoPayment{TxID: tx.TxHash(), Address: addr, Value: demoValue, Height: m.wallet.Height(), BlockHash: hashes[0]}
	return p, m.mine(ctx, demoConfirmations-1)
}

// fillBlock puts this block's transactions in the node's mempool: one
// funded from the wallet's oldest outputs that pays every kind plus an
// OP_RETURN, and one that spends the outputs of earlier such transactions.
func (m *chainMiner) fillBlock(ctx context.Context) error {
	var outs []*wire.TxOut
	for _, k := range fillerKinds {
		script, err := m.wallet.NewScript(k)
		if err != nil {
			return err
		}
		outs = append(outs, wire.NewTxOut(outputValue, script))
	}
	opReturn, err := btcdtest.NullDataScript([]byte("cfindexd regtest demo"))
	if err != nil {
		return err
	}
	outs = append(outs, wire.NewTxOut(0, opReturn))
	fund, err := m.wallet.Fund(outs, feeRate)
	if err != nil {
		return err
	}
	if err := m.send(ctx, fund); err != nil {
		return err
	}

	var ins []btcdtest.UTXO
	for _, u := range m.wallet.Unspent(fillerKinds...) {
		if !u.Coinbase && u.Value == outputValue {
			ins = append(ins, u)
		}
		if len(ins) == len(fillerKinds) {
			break
		}
	}
	if len(ins) == 0 {
		return nil // the first block: nothing to spend yet
	}
	p2tr, err := m.wallet.NewScript(btcdtest.KindP2TR)
	if err != nil {
		return err
	}
	change, err := m.wallet.NewScript(btcdtest.KindP2WPKH)
	if err != nil {
		return err
	}
	spend, err := m.wallet.BuildTx(ins, []*wire.TxOut{wire.NewTxOut(outputValue, p2tr)}, change, feeRate)
	if err != nil {
		return err
	}
	return m.send(ctx, spend)
}

// send submits tx; the wallet releases its inputs if the node refuses it.
func (m *chainMiner) send(ctx context.Context, tx *wire.MsgTx) error {
	if _, err := m.node.Client().SendRawTransaction(ctx, tx); err != nil {
		m.wallet.Release(tx)
		return fmt.Errorf("sendrawtransaction %s: %w", tx.TxHash(), err)
	}
	return nil
}

// mine mines count blocks in chunks and connects them to the wallet.
func (m *chainMiner) mine(ctx context.Context, count int) error {
	for count > 0 {
		n := min(count, mineChunk)
		if _, err := m.node.Mine(ctx, n); err != nil {
			return fmt.Errorf("mine %d blocks: %w", n, err)
		}
		count -= n
		m.minedBlocks(n)
	}
	return m.catchUp(ctx)
}

// minedBlocks counts n more blocks mined and tells progress.
func (m *chainMiner) minedBlocks(n int) {
	m.mined += n
	if m.progress != nil {
		m.progress(m.mined)
	}
}

// catchUp connects every block above the wallet's height, from genesis on
// the first call, up to the node's tip.
func (m *chainMiner) catchUp(ctx context.Context) error {
	client := m.node.Client()
	info, err := client.GetChainInfo(ctx)
	if err != nil {
		return err
	}
	for h := m.wallet.Height() + 1; h <= int32(info.Blocks); h++ {
		hash, err := client.GetBlockHash(ctx, int64(h))
		if err != nil {
			return err
		}
		blk, err := client.GetRawBlock(ctx, hash)
		if err != nil {
			return err
		}
		if err := m.wallet.ConnectBlock(blk, h); err != nil {
			return fmt.Errorf("wallet: block %d: %w", h, err)
		}
	}
	return nil
}

// hasTx reports whether blk holds txid.
func hasTx(blk *wire.MsgBlock, txid chainhash.Hash) bool {
	for _, tx := range blk.Transactions {
		if tx.TxHash() == txid {
			return true
		}
	}
	return false
}
