package btcdtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"golang.org/x/sync/errgroup"
)

// MainnetShape sizes a mainnet-shaped chain (GenerateMainnetChain).
type MainnetShape struct {
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
func (s MainnetShape) oldCoins() int {
	if s.OldCoins > 0 {
		return s.OldCoins
	}
	return seedOutputsPerTx * s.TxsPerBlock
}

// Limits of MainnetShape. Simnet retargets at height 2016, which blocks
// mined here at the minimum difficulty must stay below (with ~300
// activation blocks and up to ~120 of pre-history); 4,000 transactions of
// this mix come near the block weight limit.
const (
	MaxMainnetBlocks      = 1500
	MaxMainnetTxsPerBlock = 4000
)

// Validate checks the shape's ranges.
func (s MainnetShape) Validate() error {
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

// MainnetStats describes a generated mainnet-shaped chain.
type MainnetStats struct {
	Shape MainnetShape `json:"shape"`
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

// MainnetProgress is reported after every rich block.
type MainnetProgress struct {
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
func (g *mainnetGen) coinbaseMaturity() int32 { return int32(g.n.params.CoinbaseMaturity) }

// mainnetGen builds a mainnet-shaped chain on a node.
type mainnetGen struct {
	n     *Node
	shape MainnetShape
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
	stats    MainnetStats
	sink     func(height int32, raw []byte) error
	// waves holds the signing wave of each transaction of the block being
	// built, by index.
	waves []int
	// firstRich is the height of the first rich block, once known.
	firstRich int32
	signWall  time.Duration
}

// GenerateMainnetChain builds a mainnet-shaped chain on n, which must be
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
func GenerateMainnetChain(ctx context.Context, n *Node, shape MainnetShape, sink func(height int32, raw []byte) error, progress func(MainnetProgress)) (MainnetStats, error) {
	if err := shape.Validate(); err != nil {
		return MainnetStats{}, err
	}
	start := time.Now()
	g := &mainnetGen{
		n:     n,
		shape: shape,
		rng:   rand.New(rand.NewPCG(uint64(shape.Seed), 0x6d61696e6e6574)),
		keys:  newKeySeq(shape.Seed),
		sink:  sink,
		stats: MainnetStats{
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
	g.times = []time.Time{g.n.params.GenesisBlock.Header.Timestamp}
	return g.emit(0, g.n.params.GenesisBlock)
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
	limit := int(g.coinbaseMaturity()) + maxActivationRounds*int(g.n.params.MinerConfirmationWindow)
	// At least minMature coinbases must be spendable for the pre-history.
	const minMature = 100
	for range limit {
		next := g.height + 1
		if next > g.coinbaseMaturity()+minMature {
			active, err := softforksActive(ctx, g.n, "segwit", "taproot")
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
func (g *mainnetGen) mineRich(ctx context.Context, start time.Time, progress func(MainnetProgress)) error {
	eg, ectx := errgroup.WithContext(ctx)
	blocks := make(chan *wire.MsgBlock, 1)
	eg.Go(func() error {
		for blk := range blocks {
			if err := g.n.submitAsTip(ectx, blk); err != nil {
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
				progress(MainnetProgress{Block: i + 1, Blocks: g.shape.Blocks, Height: height, Txs: g.stats.Txs, Elapsed: time.Since(start)})
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

// matureCoinbases moves coinbase outputs that a block at height may spend
// into the pool.
func (g *mainnetGen) matureCoinbases(height int32) {
	for len(g.immature) > 0 && height-g.immature[0].height >= g.coinbaseMaturity() {
		c := g.immature[0]
		g.immature = g.immature[1:]
		g.addToPool(c)
	}
}

func (g *mainnetGen) addToPool(o genOut) {
	for int32(len(g.pool)) <= o.height {
		g.pool = append(g.pool, nil)
	}
	g.pool[o.height] = append(g.pool[o.height], o)
	g.counts.add(int(o.height), 1)
}

// drain removes and returns every output created at height h.
func (g *mainnetGen) drain(h int32) []genOut {
	if int(h) >= len(g.pool) {
		return nil
	}
	b := g.pool[h]
	g.pool[h] = nil
	g.counts.add(int(h), -int64(len(b)))
	return b
}

// planBlock chooses the transactions of the rich block at height.
func (g *mainnetGen) planBlock(height int32) ([]*plannedTx, error) {
	for int32(len(g.pool)) <= height {
		g.pool = append(g.pool, nil)
	}
	txs := make([]*plannedTx, 0, g.shape.TxsPerBlock)
	for len(txs) < g.shape.TxsPerBlock {
		nIn := sampleInputs(g.rng)
		var ins []genOut
		var parents []int32
		var sum int64
		for len(ins) < nIn || sum < minGenInputs {
			if len(ins) >= 200 {
				return nil, fmt.Errorf("mainnet-shaped chain: block %d: 200 inputs worth only %d sat", height, sum)
			}
			o, class, ok := g.pick(height, sampleAgeClass(g.rng))
			if !ok {
				return nil, fmt.Errorf("mainnet-shaped chain: block %d: no spendable output left", height)
			}
			g.stats.SpendAges[ageClassNames[class]]++
			g.stats.SpentKinds[o.kind.String()]++
			ins = append(ins, o)
			parents = append(parents, o.blockTx)
			sum += o.value
		}
		nOut := sampleOutputs(g.rng)
		outs := make([]mixKind, 0, nOut)
		for range nOut - 1 {
			outs = append(outs, sampleKind(g.rng))
		}
		change := ins[0].kind
		if change == mixP2PK {
			change = mixP2WPKH
		}
		outs = append(outs, change)
		p := g.buildTx(height, len(txs), ins, parents, outs, g.rng.Float64() < opReturnTxShare, 1+g.rng.Int64N(25))
		txs = append(txs, p)
		g.stats.Txs++
		g.stats.Inputs += len(ins)
		g.stats.Outputs += len(p.tx.TxOut)
		g.stats.MaxInputs = max(g.stats.MaxInputs, len(ins))
	}
	return txs, nil
}

// pick removes and returns an output of the age class for a block at
// height, every output of the class's heights equally likely, falling
// back to other ages when that class has none, and returns the class it
// came from.
func (g *mainnetGen) pick(height int32, class int) (genOut, int, bool) {
	for range numAgeClasses {
		lo, hi := g.ageRange(height, class)
		if lo <= hi {
			below := g.counts.prefix(int(lo) - 1)
			if n := g.counts.prefix(int(hi)) - below; n > 0 {
				h := g.counts.find(below + g.rng.Int64N(n))
				if o, ok := g.takeAt(int32(h)); ok {
					return o, class, true
				}
			}
		}
		class = (class + numAgeClasses - 1) % numAgeClasses // older classes first, then younger
	}
	return genOut{}, 0, false
}

// ageRange is the range of creation heights of the age class for a block
// at height.
func (g *mainnetGen) ageRange(height int32, class int) (lo, hi int32) {
	switch class {
	case ageClassSame:
		return height, height
	case ageClassRecent:
		return max(0, height-recentBlocks), height - 1
	case ageClassDay:
		return max(0, height-dayBlocks), height - recentBlocks - 1
	}
	// Old coins: more than a day old, or from before the rich blocks.
	return 0, max(height-dayBlocks-1, g.firstRich-1)
}

// takeAt removes a random output created at height h from the pool.
func (g *mainnetGen) takeAt(h int32) (genOut, bool) {
	if h < 0 || int(h) >= len(g.pool) {
		return genOut{}, false
	}
	b := g.pool[h]
	if len(b) == 0 {
		return genOut{}, false
	}
	i := g.rng.IntN(len(b))
	o := b[i]
	b[i] = b[len(b)-1]
	g.pool[h] = b[:len(b)-1]
	g.counts.add(int(h), -1)
	return o, true
}

// fenwick counts outputs per height (a binary indexed tree) for prefix
// sums and picking by rank.
type fenwick struct {
	t [fenwickHeights + 1]int64 // 1-based: t[i] sums heights i-(i&-i)..i-1
}

// maxChainHeight bounds the generator's chain: simnet retargets at height
// 2016, which blocks mined at the minimum difficulty must stay below.
// fenwickHeights is the power of two above it.
const (
	maxChainHeight = 2015
	fenwickHeights = 2048
)

func (f *fenwick) add(h int, d int64) {
	for i := h + 1; i <= fenwickHeights; i += i & -i {
		f.t[i] += d
	}
}

// prefix is the count at heights 0..h (0 for h < 0).
func (f *fenwick) prefix(h int) int64 {
	var sum int64
	for i := min(h+1, fenwickHeights); i > 0; i -= i & -i {
		sum += f.t[i]
	}
	return sum
}

// find returns the lowest height whose prefix count exceeds k.
func (f *fenwick) find(k int64) int {
	pos := 0
	for step := fenwickHeights; step > 0; step >>= 1 {
		if next := pos + step; next <= fenwickHeights && f.t[next] <= k {
			pos = next
			k -= f.t[next]
		}
	}
	return pos
}

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
	blk := buildBlock(g.n.params, g.tip, height, nextBlockTime(g.times), txs, script, fees)
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
	return g.n.submitAsTip(ctx, blk)
}

// connect records blk as the generator's tip and hands it to the sink.
func (g *mainnetGen) connect(blk *wire.MsgBlock) error {
	g.height++
	g.tip = blk.BlockHash()
	g.times = append(g.times, blk.Header.Timestamp)
	if len(g.times) > medianTimeBlocks {
		g.times = g.times[1:]
	}
	return g.emit(g.height, blk)
}

// nextBlockTime is max(now, median-time-past of times + 1s).
func nextBlockTime(times []time.Time) time.Time {
	sorted := slices.Clone(times)
	slices.SortFunc(sorted, time.Time.Compare)
	mtp := sorted[len(sorted)/2]
	now := time.Unix(time.Now().Unix(), 0)
	if least := mtp.Add(time.Second); now.Before(least) {
		return least
	}
	return now
}
