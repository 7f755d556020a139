// Package bloomtest is the BIP-37 differential's shared test fixture: a
// tx-rich btcd chain with a pool of its real filter elements, and random
// wallet-like filters over them. Package bloom holds FilterBlock to btcd
// with it, and cmd/cfindexd holds the real daemon's filtered blocks to
// btcd's. It is for tests only; it never touches anything but the btcd it
// is given.
package bloomtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/bloom"
	"github.com/cfindexd/cfindexd/internal/btcdtest"
)

// Chain is a btcd chain for the differential: tx-rich blocks (every
// standard script kind, spends of the previous block's outputs) and one
// block of many wallet payments, so partial merkle trees are deep.
type Chain struct {
	Node *btcdtest.Node
	// Blocks are heights 1..tip, Txids their txids.
	Blocks []*wire.MsgBlock
	Txids  [][]chainhash.Hash
	// Pool holds real output pushes, txids and serialized outpoints: what
	// wallets' filters hold.
	Pool [][]byte
	// Payments is how many payments the last block holds.
	Payments int
}

// Build mines richBlocks tx-rich blocks and then a block of up to payments
// wallet payments (fewer if the wallet runs out of funds) on node, and
// reads the chain back.
func Build(ctx context.Context, node *btcdtest.Node, richBlocks, payments int) (*Chain, error) {
	w := node.Wallet()
	if err := btcdtest.BuildTxRichChain(ctx, node, w, richBlocks); err != nil {
		return nil, err
	}
	kinds := []btcdtest.Kind{btcdtest.KindP2PKH, btcdtest.KindP2WPKH, btcdtest.KindP2TR, btcdtest.KindP2PK,
		btcdtest.KindBareMultisig, btcdtest.KindP2SHMultisig, btcdtest.KindP2WSH}
	c := &Chain{Node: node}
	for i := range payments {
		script, err := w.NewScript(kinds[i%len(kinds)])
		if err != nil {
			return nil, err
		}
		if _, err := w.Send(ctx, node, []*wire.TxOut{wire.NewTxOut(20_000, script)}); err != nil {
			if errors.Is(err, btcdtest.ErrInsufficientFunds) {
				break
			}
			return nil, err
		}
		c.Payments++
	}
	if _, err := node.Generate(ctx, 1); err != nil {
		return nil, err
	}
	_, tip, err := node.BestBlock(ctx)
	if err != nil {
		return nil, err
	}
	for h := int32(1); h <= tip; h++ {
		hash, err := node.BlockHash(ctx, h)
		if err != nil {
			return nil, err
		}
		blk, err := node.Block(ctx, hash)
		if err != nil {
			return nil, fmt.Errorf("block %d: %w", h, err)
		}
		c.Blocks = append(c.Blocks, blk)
		c.Txids = append(c.Txids, bloom.BlockTxids(blk))
		for i, tx := range blk.Transactions {
			id := c.Txids[h-1][i]
			c.Pool = append(c.Pool, id[:])
			for _, out := range tx.TxOut {
				pushes, _ := txscript.PushedData(out.PkScript)
				for _, p := range pushes {
					if len(p) > 0 {
						c.Pool = append(c.Pool, p)
					}
				}
			}
			for _, in := range tx.TxIn {
				op := in.PreviousOutPoint
				c.Pool = append(c.Pool, append(op.Hash[:len(op.Hash):len(op.Hash)], byte(op.Index), byte(op.Index>>8), byte(op.Index>>16), byte(op.Index>>24)))
			}
		}
	}
	return c, nil
}

// Hashes returns the block hashes of Blocks[from:from+n].
func (c *Chain) Hashes(from, n int) []chainhash.Hash {
	out := make([]chainhash.Hash, n)
	for i := range out {
		out[i] = c.Blocks[from+i].BlockHash()
	}
	return out
}

// RandomFilter draws a wallet-like filter: 1..60 elements, about two in
// three of them real elements of the chain, the rest random 20-byte
// strings, sized for a false-positive rate from 0.2 down to 0.0001, in
// mode. It never holds the empty element, whose matching btcd and Core
// disagree on (bloom/doc.go, difference 2).
func (c *Chain) RandomFilter(rng *rand.Rand, mode wire.BloomUpdateType) *bloom.Filter {
	fprs := [...]float64{0.2, 0.05, 0.01, 0.001, 0.0001}
	for {
		n := 1 + rng.IntN(60)
		p, err := bloom.ParamsFor(n, fprs[rng.IntN(len(fprs))])
		if err != nil {
			panic(err)
		}
		f := bloom.New(p, rng.Uint32(), mode)
		for range n {
			if rng.IntN(3) == 0 {
				var e [20]byte
				for i := range e {
					e[i] = byte(rng.Uint32())
				}
				f.Insert(e[:])
				continue
			}
			f.Insert(c.Pool[rng.IntN(len(c.Pool))])
		}
		if !f.Contains(nil) {
			return f
		}
	}
}

// Element returns a random element of the pool.
func (c *Chain) Element(rng *rand.Rand) []byte { return c.Pool[rng.IntN(len(c.Pool))] }

// SequenceMode is the update mode of the differential's filter sequence
// seq: BLOOM_UPDATE_NONE, BLOOM_UPDATE_ALL and BLOOM_UPDATE_P2PUBKEY_ONLY in
// turn.
func SequenceMode(seq int) wire.BloomUpdateType {
	modes := [...]wire.BloomUpdateType{wire.BloomUpdateNone, wire.BloomUpdateAll, wire.BloomUpdateP2PubkeyOnly}
	return modes[seq%len(modes)]
}

// EnvInt reads a positive integer from the environment variable name (a
// knob that makes a differential larger), or def when it is unset or not
// one.
func EnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
