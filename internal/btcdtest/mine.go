package btcdtest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/headers"
)

// blockVersion signals BIP-9 bits 0-2 (CSV, segwit, taproot) so that side
// branches on simnet vote like btcd's own miner.
const blockVersion = 0x20000007

// witnessCommitmentHeader starts the BIP-141 commitment output script:
// OP_RETURN, push 36, then the 4-byte magic 0xaa21a9ed.
var witnessCommitmentHeader = []byte{txscript.OP_RETURN, txscript.OP_DATA_36, 0xaa, 0x21, 0xa9, 0xed}

// MineBlockOn builds and solves a block on top of the block prevHash at
// prevHeight with timestamp prevTime: a coinbase paying the height's subsidy
// to coinbaseScript (BIP-34 height in its scriptSig), then txs in order. It
// sets the merkle root, adds the BIP-141 witness commitment when any tx has
// a witness, uses prevTime+1s as the timestamp and params.PowLimitBits as
// the target, and grinds the nonce. Fees are not claimed. Identical inputs
// give an identical block, so vary coinbaseScript or txs for competing
// blocks. It is meant for regtest and simnet (trivial proof of work; on
// simnet only below the first retarget at height 2016) and panics on a
// network whose minimum difficulty a CPU cannot meet in a test.
func MineBlockOn(params *chaincfg.Params, prevHash chainhash.Hash, prevHeight int32, prevTime time.Time,
	txs []*wire.MsgTx, coinbaseScript []byte) *wire.MsgBlock {

	if !params.GenerateSupported {
		panic(fmt.Sprintf("btcdtest: MineBlockOn on %s: proof of work too hard for a test", params.Name))
	}
	return BuildBlock(params, prevHash, prevHeight+1, time.Unix(prevTime.Unix()+1, 0), txs, coinbaseScript, 0)
}

// BuildBlock assembles and solves a block at height with the given
// timestamp; the coinbase claims the subsidy plus fees.
func BuildBlock(params *chaincfg.Params, prevHash chainhash.Hash, height int32, timestamp time.Time,
	txs []*wire.MsgTx, coinbaseScript []byte, fees int64) *wire.MsgBlock {

	coinbase := coinbaseTx(params, height, coinbaseScript, fees)
	blk := &wire.MsgBlock{
		Header: wire.BlockHeader{
			Version:   blockVersion,
			PrevBlock: prevHash,
			Timestamp: timestamp,
			Bits:      params.PowLimitBits,
		},
		Transactions: append([]*wire.MsgTx{coinbase}, txs...),
	}
	if anyWitness(txs) {
		addWitnessCommitment(blk)
	}
	blk.Header.MerkleRoot = merkleRoot(blk.Transactions, false)
	solve(&blk.Header)
	return blk
}

// MineOn mines a block on prevHash (fetched from btcd, active chain or side
// branch; its height is read from its BIP-34 coinbase) with txs and coinbaseScript via MineBlockOn and submits it. It
// returns the block even when btcd rejects it (the error then wraps
// ErrBlockRejected).
func (n *Node) MineOn(ctx context.Context, prevHash chainhash.Hash, txs []*wire.MsgTx,
	coinbaseScript []byte) (*wire.MsgBlock, error) {

	prev, err := n.Block(ctx, prevHash)
	if err != nil {
		return nil, err
	}
	height, err := CoinbaseHeight(n.params, prev)
	if err != nil {
		return nil, err
	}
	blk := MineBlockOn(n.params, prevHash, height, prev.Header.Timestamp, txs, coinbaseScript)
	return blk, n.SubmitBlock(ctx, blk)
}

// subsidy is the block reward at height (no fees).
func subsidy(params *chaincfg.Params, height int32) int64 {
	const base = 50 * 100_000_000
	if params.SubsidyReductionInterval == 0 {
		return base
	}
	halvings := int64(height) / int64(params.SubsidyReductionInterval)
	if halvings >= 63 {
		return 0
	}
	return base >> uint(halvings)
}

func coinbaseTx(params *chaincfg.Params, height int32, payTo []byte, fees int64) *wire.MsgTx {
	sigScript, err := txscript.NewScriptBuilder().AddInt64(int64(height)).
		AddData([]byte("btcdtest")).Script()
	if err != nil {
		panic(fmt.Sprintf("btcdtest: coinbase script: %v", err)) // unreachable: tiny pushes
	}
	tx := wire.NewMsgTx(1)
	tx.AddTxIn(&wire.TxIn{
		PreviousOutPoint: wire.OutPoint{Index: math.MaxUint32},
		SignatureScript:  sigScript,
		Sequence:         wire.MaxTxInSequenceNum,
	})
	tx.AddTxOut(wire.NewTxOut(subsidy(params, height)+fees, payTo))
	return tx
}

func anyWitness(txs []*wire.MsgTx) bool {
	for _, tx := range txs {
		if tx.HasWitness() {
			return true
		}
	}
	return false
}

// addWitnessCommitment gives the coinbase the all-zero witness reserved
// value and an output committing to dSHA256(witness root || reserved).
func addWitnessCommitment(blk *wire.MsgBlock) {
	coinbase := blk.Transactions[0]
	var reserved [32]byte
	coinbase.TxIn[0].Witness = wire.TxWitness{reserved[:]}
	root := merkleRoot(blk.Transactions, true)
	commitment := chainhash.DoubleHashB(append(root[:], reserved[:]...))
	script := append(append([]byte(nil), witnessCommitmentHeader...), commitment...)
	coinbase.AddTxOut(wire.NewTxOut(0, script))
}

// merkleRoot is the txid (or, with witness, wtxid with the coinbase as
// zero) merkle root of txs.
func merkleRoot(txs []*wire.MsgTx, witness bool) chainhash.Hash {
	level := make([]chainhash.Hash, len(txs))
	for i, tx := range txs {
		switch {
		case witness && i == 0:
			// The coinbase's wtxid counts as zero.
		case witness:
			level[i] = tx.WitnessHash()
		default:
			level[i] = tx.TxHash()
		}
	}
	for len(level) > 1 {
		if len(level)%2 == 1 {
			level = append(level, level[len(level)-1])
		}
		next := level[:0:0]
		for i := 0; i < len(level); i += 2 {
			next = append(next, chainhash.DoubleHashH(append(level[i][:], level[i+1][:]...)))
		}
		level = next
	}
	return level[0]
}

// solve grinds hdr.Nonce until the header hash meets hdr.Bits.
func solve(hdr *wire.BlockHeader) {
	target := headers.CompactToBig(hdr.Bits)
	for nonce := uint32(0); ; nonce++ {
		hdr.Nonce = nonce
		hash := hdr.BlockHash()
		if headers.HashToBig(&hash).Cmp(target) <= 0 {
			return
		}
		if nonce == math.MaxUint32 {
			hdr.Timestamp = hdr.Timestamp.Add(time.Second)
		}
	}
}

// CoinbaseHeight reads a block's height from the BIP-34 push that starts its
// coinbase scriptSig; the genesis block of params is height 0. btcd puts the
// height in every coinbase on regtest and simnet, so this also works for
// side-branch blocks, whose height btcd's verbose RPCs refuse to report.
func CoinbaseHeight(params *chaincfg.Params, blk *wire.MsgBlock) (int32, error) {
	if blk.BlockHash() == *params.GenesisHash {
		return 0, nil
	}
	if len(blk.Transactions) == 0 || len(blk.Transactions[0].TxIn) == 0 {
		return 0, fmt.Errorf("block %s has no coinbase", blk.BlockHash())
	}
	script := blk.Transactions[0].TxIn[0].SignatureScript
	if len(script) == 0 {
		return 0, fmt.Errorf("block %s: empty coinbase scriptSig", blk.BlockHash())
	}
	op := script[0]
	switch {
	case op == txscript.OP_0:
		return 0, nil
	case op >= txscript.OP_1 && op <= txscript.OP_16:
		return int32(op-txscript.OP_1) + 1, nil
	case op >= 1 && op <= 4 && len(script) > int(op):
		if script[op]&0x80 != 0 { // script numbers are sign-magnitude
			return 0, fmt.Errorf("block %s: negative coinbase height push %x", blk.BlockHash(), script[:op+1])
		}
		var h int64
		for i := int(op); i >= 1; i-- {
			h = h<<8 | int64(script[i])
		}
		return int32(h), nil
	}
	return 0, fmt.Errorf("block %s: coinbase scriptSig %x does not start with a height", blk.BlockHash(), script)
}

// NextBlockTime is max(now, median-time-past of times + 1s).
func NextBlockTime(times []time.Time) time.Time {
	sorted := slices.Clone(times)
	slices.SortFunc(sorted, time.Time.Compare)
	mtp := sorted[len(sorted)/2]
	now := time.Unix(time.Now().Unix(), 0)
	if least := mtp.Add(time.Second); now.Before(least) {
		return least
	}
	return now
}
