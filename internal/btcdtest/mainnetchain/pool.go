package mainnetchain

import (
	"fmt"
)

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
