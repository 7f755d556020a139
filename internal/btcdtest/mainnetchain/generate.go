package mainnetchain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"golang.org/x/sync/errgroup"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
)

// Shape sizes a mainnet-shaped chain (Generate).
type Shape struct {
	// Blocks is the number of transaction-rich blocks, after the empty
	// blocks that activate segwit and taproot and the pre-history blocks
	// (seedHistory).
	Blocks int
	// TxsPerBlock is the number of transactions (coinbase excluded) in
	// every rich block.
	TxsPerBlock int
	// Seed fixes the transactions: the same shape and seed give the same
	// transactions on a fresh node (block hashes differ by timestamps).
	Seed int64
	// OldCoins is how many unspent outputs the pre-history leaves for the
	// rich blocks' old spends; 0 means 300 per transaction of a rich block
	// (600,000 for 2,000), which lasts the chain. Fewer make a smaller
	// chain quicker to generate (tests), with fewer old spends.
	OldCoins int
}

// oldCoins resolves OldCoins.
func (s Shape) oldCoins() int {
	if s.OldCoins > 0 {
		return s.OldCoins
	}
	return seedOutputsPerTx * s.TxsPerBlock
}

// Limits of Shape. Simnet retargets at height 2016, which blocks
// mined here at the minimum difficulty must stay below (with ~300
// activation blocks and up to ~120 of pre-history); 4,000 transactions of
// this mix come near the block weight limit.
const (
	MaxMainnetBlocks      = 1500
	MaxMainnetTxsPerBlock = 4000
)

// Validate checks the shape's ranges.
func (s Shape) Validate() error {
	switch {
	case s.Blocks < 1 || s.Blocks > MaxMainnetBlocks:
		return fmt.Errorf("mainnet-shaped chain: %d blocks is outside 1..%d", s.Blocks, MaxMainnetBlocks)
	case s.TxsPerBlock < 10 || s.TxsPerBlock > MaxMainnetTxsPerBlock:
		return fmt.Errorf("mainnet-shaped chain: %d transactions a block is outside 10..%d", s.TxsPerBlock, MaxMainnetTxsPerBlock)
	case s.OldCoins < 0 || s.OldCoins > seedOutputsPerTx*MaxMainnetTxsPerBlock:
		return fmt.Errorf("mainnet-shaped chain: %d old coins is outside 0..%d", s.OldCoins, seedOutputsPerTx*MaxMainnetTxsPerBlock)
	}
	return nil
}

// Stats describes a generated mainnet-shaped chain.
type Stats struct {
	Shape Shape `json:"shape"`
	// Height and Tip are the chain's tip; FirstRich is the height of the
	// first rich block (the ones before are empty but for coinbases, and
	// the pre-history blocks just below FirstRich).
	Height    int32  `json:"height"`
	Tip       string `json:"tip"`
	FirstRich int32  `json:"first_rich_height"`
	// Txs, Inputs and Outputs count the rich blocks' transactions
	// (coinbases excluded), their inputs and outputs.
	Txs     int `json:"txs"`
	Inputs  int `json:"inputs"`
	Outputs int `json:"outputs"`
	// OutputKinds and SpentKinds count outputs created and spent in the
	// rich blocks by script kind; SpendAges counts inputs by the age of
	// the output they spend.
	OutputKinds map[string]int `json:"output_kinds"`
	SpentKinds  map[string]int `json:"spent_kinds"`
	SpendAges   map[string]int `json:"spend_ages"`
	// MaxInputs is the largest input count of one transaction.
	MaxInputs int `json:"max_inputs"`
	// RichBytes and RichWeight total the rich blocks' serialized sizes and
	// weights; ChainBytes totals every block's size, genesis included.
	RichBytes  int64 `json:"rich_bytes"`
	RichWeight int64 `json:"rich_weight"`
	ChainBytes int64 `json:"chain_bytes"`
	// Took is the generation's wall time; SignWall the part of it spent
	// signing (on every core), the rest being mostly btcd validating and
	// storing the blocks.
	Took     time.Duration `json:"took_ns"`
	SignWall time.Duration `json:"sign_wall_ns"`
}

// Progress is reported after every rich block.
type Progress struct {
	Block, Blocks int // rich blocks done, of
	Height        int32
	Txs           int
	Elapsed       time.Duration
}

// genOut is an unspent output of the generator's wallet.
type genOut struct {
	op     wire.OutPoint
	value  int64
	key    uint32 // first key of the output's script (mixKind.keys)
	height int32  // block that created it
	// blockTx is the index in its block of the transaction that created
	// it while that block is being built (its txid is not known before
	// it is signed), -1 afterwards.
	blockTx int32
	kind    mixKind
}

// coinbaseMaturity is how many blocks a coinbase waits before it can be
// spent (100 on every network btcd knows).
func (g *mainnetGen) coinbaseMaturity() int32 { return int32(g.n.Params().CoinbaseMaturity) }

// mainnetGen builds a mainnet-shaped chain on a node.
type mainnetGen struct {
	n     *btcdtest.Node
	shape Shape
	rng   *rand.Rand
	keys  *keySeq
	// pool holds the spendable outputs by the height that created them;
	// counts has their number per height, for picking uniformly among
	// the outputs of a range of heights.
	pool   [][]genOut
	counts fenwick
	// immature are coinbase outputs waiting for maturity, oldest first.
	immature []genOut
	tip      chainhash.Hash
	height   int32
	times    []time.Time
	stats    Stats
	sink     func(height int32, raw []byte) error
	// waves holds the signing wave of each transaction of the block being
	// built, by index.
	waves []int
	// firstRich is the height of the first rich block, once known.
	firstRich int32
	signWall  time.Duration
}

// Generate builds a mainnet-shaped chain on n, which must be
// a fresh simnet or regtest node (at its genesis block): empty blocks
// until segwit and taproot are active and the first coinbases are mature,
// a pre-history of ordinary transactions funded by those coinbases that
// leaves 300 unspent outputs per transaction of a rich block (the old
// coins of a real chain's UTXO set; seedHistory), then
// shape.Blocks blocks of shape.TxsPerBlock transactions each with
// mainnet's mix of output scripts (mainnetmix.go), input counts and spend
// ages. Every block is assembled, signed (on all cores) and solved here
// and handed to btcd with submitblock, which validates it fully; no
// transaction goes through the mempool. sink, if not nil, receives every
// block's serialization in height order, genesis first; progress, if not
// nil, is called after every rich block.
func Generate(ctx context.Context, n *btcdtest.Node, shape Shape, sink func(height int32, raw []byte) error, progress func(Progress)) (Stats, error) {
	if err := shape.Validate(); err != nil {
		return Stats{}, err
	}
	start := time.Now()
	g := &mainnetGen{
		n:     n,
		shape: shape,
		rng:   rand.New(rand.NewPCG(uint64(shape.Seed), 0x6d61696e6e6574)),
		keys:  newKeySeq(shape.Seed),
		sink:  sink,
		stats: Stats{
			Shape:       shape,
			OutputKinds: map[string]int{},
			SpentKinds:  map[string]int{},
			SpendAges:   map[string]int{},
		},
	}
	if err := g.start(ctx); err != nil {
		return g.stats, err
	}
	if err := g.prepare(ctx); err != nil {
		return g.stats, err
	}
	if err := g.seedHistory(ctx); err != nil {
		return g.stats, err
	}
	g.stats.FirstRich = g.height + 1
	g.firstRich = g.stats.FirstRich
	if err := g.mineRich(ctx, start, progress); err != nil {
		return g.stats, err
	}
	g.stats.Height, g.stats.Tip = g.height, g.tip.String()
	g.stats.Took = time.Since(start)
	g.stats.SignWall = g.signWall
	return g.stats, nil
}

// start checks the node is at genesis and hands the sink the genesis block.
func (g *mainnetGen) start(ctx context.Context) error {
	tip, height, err := g.n.BestBlock(ctx)
	if err != nil {
		return fmt.Errorf("mainnet-shaped chain: %w", err)
	}
	if height != 0 {
		return fmt.Errorf("mainnet-shaped chain: node is at height %d, want a fresh node at genesis", height)
	}
	g.tip = tip
	g.times = []time.Time{g.n.Params().GenesisBlock.Header.Timestamp}
	return g.emit(0, g.n.Params().GenesisBlock)
}

// emit hands blk, at height, to the sink and counts its size.
func (g *mainnetGen) emit(height int32, blk *wire.MsgBlock) error {
	var buf bytes.Buffer
	buf.Grow(blk.SerializeSize())
	if err := blk.Serialize(&buf); err != nil {
		return fmt.Errorf("serialize block %d: %w", height, err)
	}
	g.stats.ChainBytes += int64(buf.Len())
	if g.sink != nil {
		if err := g.sink(height, buf.Bytes()); err != nil {
			return fmt.Errorf("block sink at height %d: %w", height, err)
		}
	}
	return nil
}

// prepare mines empty blocks, coinbases to fresh P2WPKH keys, until segwit
// and taproot are active for the next block and enough coinbases are
// mature to fan out.
func (g *mainnetGen) prepare(ctx context.Context) error {
	limit := int(g.coinbaseMaturity()) + btcdtest.MaxActivationRounds*int(g.n.Params().MinerConfirmationWindow)
	// At least minMature coinbases must be spendable for the pre-history.
	const minMature = 100
	for range limit {
		next := g.height + 1
		if next > g.coinbaseMaturity()+minMature {
			active, err := g.n.SoftforksActive(ctx, "segwit", "taproot")
			if err != nil {
				return fmt.Errorf("mainnet-shaped chain: %w", err)
			}
			if active {
				return nil
			}
		}
		blk, err := g.assemble(nil, 0)
		if err != nil {
			return err
		}
		if err := g.submit(ctx, blk); err != nil {
			return err
		}
	}
	return fmt.Errorf("mainnet-shaped chain: segwit/taproot inactive after %d blocks", limit)
}

// Pre-history: before the rich blocks, the chain gets a large set of
// unspent outputs in many ordinary transactions, as a real chain has its
// UTXO set, so that old coins are there to be spent from the first rich
// block on. The rich blocks alone cannot provide them: they create only a
// few hundred more spendable outputs than they spend.
const (
	// seedOutputsPerTx: by default the pre-history holds this many
	// outputs per transaction of a rich block (600,000 for 2,000).
	seedOutputsPerTx = 300
	// seedTxOutputs is the outputs of each pre-history transaction (a
	// payment and change, or two): few, so that each is spent rarely and,
	// as on mainnet, the old coins' transactions do not stay in a cache by
	// being looked up again and again. seedTxsPerBlock go into one block
	// (about 3M weight units).
	seedTxOutputs   = 3
	seedTxsPerBlock = 4000
	// fanOutWeight bounds the weight of a block of coinbase fan-outs.
	fanOutWeight = 3_000_000
)

// seedHistory mines the pre-history: one round of blocks that spend every
// mature coinbase into many P2WPKH outputs, then blocks of ordinary
// transactions, one input and seedTxOutputs outputs of the payment mix
// each, spending those.
func (g *mainnetGen) seedHistory(ctx context.Context) error {
	g.matureCoinbases(g.height + 1)
	var coins []genOut
	for h := range g.pool {
		coins = append(coins, g.drain(int32(h))...)
	}
	if len(coins) == 0 {
		return errors.New("mainnet-shaped chain: no mature coinbase to fan out")
	}
	nSeed := (g.shape.oldCoins() + seedTxOutputs - 1) / seedTxOutputs
	per := min(2000, max(2, (nSeed+len(coins)-1)/len(coins)))
	perBlock := max(1, fanOutWeight/(per*4*int(outputVSize[mixP2WPKH])+400))
	var level1 []genOut
	for len(coins) > 0 {
		height := g.height + 1
		n := min(perBlock, len(coins))
		var txs []*plannedTx
		for _, c := range coins[:n] {
			outs := make([]mixKind, per)
			for i := range outs {
				outs[i] = mixP2WPKH
			}
			txs = append(txs, g.buildTx(height, len(txs), []genOut{c}, []int32{-1}, outs, false, 2))
		}
		coins = coins[n:]
		if err := g.seedBlock(ctx, height, txs); err != nil {
			return err
		}
		level1 = append(level1, g.drain(height)...)
	}
	level1 = level1[:min(len(level1), nSeed)]
	for len(level1) > 0 {
		height := g.height + 1
		n := min(seedTxsPerBlock, len(level1))
		var txs []*plannedTx
		for _, in := range level1[:n] {
			outs := make([]mixKind, seedTxOutputs)
			for i := range outs {
				outs[i] = sampleKind(g.rng)
			}
			txs = append(txs, g.buildTx(height, len(txs), []genOut{in}, []int32{-1}, outs, false, 1+g.rng.Int64N(10)))
		}
		level1 = level1[n:]
		if err := g.seedBlock(ctx, height, txs); err != nil {
			return err
		}
	}
	return nil
}

// seedBlock signs, assembles and submits a pre-history block.
func (g *mainnetGen) seedBlock(ctx context.Context, height int32, txs []*plannedTx) error {
	blk, err := g.finishBlock(height, txs, false)
	if err != nil {
		return err
	}
	return g.submit(ctx, blk)
}

// mineRich mines the rich blocks. Signing block h+1 overlaps btcd
// validating block h: submission runs in its own goroutine, one block
// behind.
func (g *mainnetGen) mineRich(ctx context.Context, start time.Time, progress func(Progress)) error {
	eg, ectx := errgroup.WithContext(ctx)
	blocks := make(chan *wire.MsgBlock, 1)
	eg.Go(func() error {
		for blk := range blocks {
			if err := g.n.SubmitAsTip(ectx, blk); err != nil {
				return err
			}
		}
		return nil
	})
	eg.Go(func() error {
		defer close(blocks)
		for i := range g.shape.Blocks {
			height := g.height + 1
			g.matureCoinbases(height)
			txs, err := g.planBlock(height)
			if err != nil {
				return err
			}
			blk, err := g.finishBlock(height, txs, true)
			if err != nil {
				return err
			}
			if err := g.connect(blk); err != nil {
				return err
			}
			select {
			case blocks <- blk:
			case <-ectx.Done():
				return ectx.Err()
			}
			if progress != nil {
				progress(Progress{Block: i + 1, Blocks: g.shape.Blocks, Height: height, Txs: g.stats.Txs, Elapsed: time.Since(start)})
			}
		}
		return nil
	})
	if err := eg.Wait(); err != nil {
		return fmt.Errorf("mainnet-shaped chain: %w", err)
	}
	// The last block must be btcd's tip.
	best, _, err := g.n.BestBlock(ctx)
	if err != nil {
		return fmt.Errorf("mainnet-shaped chain: %w", err)
	}
	if best != g.tip {
		return fmt.Errorf("mainnet-shaped chain: btcd's tip is %s, want %s", best, g.tip)
	}
	return nil
}
