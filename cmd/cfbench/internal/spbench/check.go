package spbench

import (
	"context"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/silentpay"
	"github.com/cfindexd/cfindexd/store"
	"github.com/cfindexd/cfindexd/store/spindex"
)

// BlockFetcher gives a block and the script each of its non-coinbase
// inputs spends, in block order, as prevouts.BlockSource does.
type BlockFetcher interface {
	FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, [][]byte, error)
}

// IndexCheck is what Check found in one run's store.
type IndexCheck struct {
	// Start and UpTo are the first and last heights the index covers.
	Start uint32 `json:"start"`
	UpTo  uint32 `json:"up_to"`
	// Blocks is how many blocks it covers; BlocksWithTweaks how many of
	// them have at least one tweak; Tweaks the transactions with a tweak.
	Blocks           int   `json:"blocks"`
	BlocksWithTweaks int   `json:"blocks_with_tweaks"`
	Tweaks           int64 `json:"tweaks"`
	// Sampled are the heights whose every transaction was recomputed from
	// btcd's data; SampledTxs and SampledTweaks the transactions read and
	// the tweaks among them, all equal to the stored ones.
	Sampled       []uint32 `json:"sampled_heights"`
	SampledTxs    int      `json:"sampled_txs"`
	SampledTweaks int      `json:"sampled_tweaks"`
}

// Check opens the store at path (genesis its chain's genesis hash) and
// checks its silent-payment index: it covers start..len(btcdHashes)-1,
// every entry names btcd's block at its height (btcdHashes[h]), parses as
// canonical tweak data and chains to the header stored (the commitment
// recomputed from the stored tweak data and taproot filter); and the
// tweaks of samples blocks with tweaks, spread over the chain, equal
// silentpay.ComputeTweakMsg over the block and spent scripts fetch gives.
func Check(ctx context.Context, path string, genesis chainhash.Hash, start uint32, btcdHashes []chainhash.Hash, fetch BlockFetcher, samples int) (IndexCheck, error) {
	st, err := store.Open(path, genesis, store.Options{Timeout: time.Second})
	if err != nil {
		return IndexCheck{}, fmt.Errorf("open the run's store: %w", err)
	}
	defer st.Close()
	x := st.SilentPayments()
	state, on := x.State()
	tip := uint32(len(btcdHashes) - 1)
	up, covers := state.IndexedUpTo()
	switch {
	case !on:
		return IndexCheck{}, fmt.Errorf("the silent-payment index is not enabled in %s", path)
	case state.Start != start || !covers || up != tip:
		return IndexCheck{}, fmt.Errorf("the silent-payment index covers %d..%d, want %d..%d (the tip)", state.Start, int64(state.Next)-1, start, tip)
	}
	c := IndexCheck{Start: state.Start, UpTo: up, Blocks: int(up-state.Start) + 1}
	withTweaks := map[uint32]int{} // height → tweak count
	prev := chainhash.Hash{}
	for a := state.Start; a <= up; a += spindex.MaxRange {
		b := min(up, a+spindex.MaxRange-1)
		tweaks, err := x.TweakData(a, b)
		if err != nil {
			return c, err
		}
		hdrs, err := x.Headers(a, b)
		if err != nil {
			return c, err
		}
		for i, rec := range tweaks {
			h := rec.Height
			if rec.BlockHash != btcdHashes[h] || hdrs[i].BlockHash != btcdHashes[h] {
				return c, fmt.Errorf("index entry at %d names block %s, btcd has %s", h, rec.BlockHash, btcdHashes[h])
			}
			parsed, err := silentpay.ParseTweakData(rec.TweakData)
			if err != nil {
				return c, fmt.Errorf("tweak data at %d: %w", h, err)
			}
			f, err := x.FilterByHeight(h)
			if err != nil {
				return c, err
			}
			if got := silentpay.NewCommitment(rec.TweakData, f.Filter).Header(prev); got != hdrs[i].Header {
				return c, fmt.Errorf("commitment header at %d: stored %s, recomputed %s", h, hdrs[i].Header, got)
			}
			prev = hdrs[i].Header
			c.Tweaks += int64(len(parsed))
			if len(parsed) > 0 {
				withTweaks[h] = len(parsed)
			}
		}
	}
	c.BlocksWithTweaks = len(withTweaks)
	for _, h := range sampleHeights(withTweaks, state.Start, up, samples) {
		n, tw, err := checkBlock(ctx, x, h, btcdHashes[h], fetch)
		if err != nil {
			return c, err
		}
		c.Sampled = append(c.Sampled, h)
		c.SampledTxs += n
		c.SampledTweaks += tw
	}
	return c, nil
}

// sampleHeights picks up to n heights of withTweaks spread evenly over
// from..to: the last height with tweaks at or below each of n evenly
// spaced marks, without repeats, the tip's mark last.
func sampleHeights(withTweaks map[uint32]int, from, to uint32, n int) []uint32 {
	var out []uint32
	for i := range n {
		mark := from + uint32(uint64(to-from)*uint64(i+1)/uint64(n))
		for h := mark; h >= from; h-- {
			if _, ok := withTweaks[h]; ok {
				if len(out) == 0 || out[len(out)-1] != h {
					out = append(out, h)
				}
				break
			}
			if h == 0 {
				break
			}
		}
	}
	return out
}

// checkBlock recomputes the tweak of every transaction of the block at h
// from btcd's data and compares them with the stored tweak data. It
// returns the transactions read and the tweaks found.
func checkBlock(ctx context.Context, x *spindex.Index, h uint32, hash chainhash.Hash, fetch BlockFetcher) (int, int, error) {
	recs, err := x.TweakData(h, h)
	if err != nil {
		return 0, 0, err
	}
	stored, err := silentpay.ParseTweakData(recs[0].TweakData)
	if err != nil {
		return 0, 0, fmt.Errorf("tweak data at %d: %w", h, err)
	}
	block, prevScripts, err := fetch.FetchBlock(ctx, hash)
	if err != nil {
		return 0, 0, fmt.Errorf("fetch block %s (height %d) from btcd: %w", hash, h, err)
	}
	var want []silentpay.TxTweak
	for i, tx := range block.Transactions {
		var spent [][]byte
		if i > 0 {
			if len(prevScripts) < len(tx.TxIn) {
				return 0, 0, fmt.Errorf("block %d: %d spent scripts for transaction %d's %d inputs", h, len(prevScripts), i, len(tx.TxIn))
			}
			spent, prevScripts = prevScripts[:len(tx.TxIn)], prevScripts[len(tx.TxIn):]
		}
		tw, ok, err := silentpay.ComputeTweakMsg(tx, spent)
		if err != nil {
			return 0, 0, fmt.Errorf("block %d transaction %d: %w", h, i, err)
		}
		if ok {
			want = append(want, silentpay.TxTweak{TxIndex: uint32(i), Tweak: tw})
		}
	}
	if len(want) != len(stored) {
		return 0, 0, fmt.Errorf("block %d: %d tweaks stored, %d recomputed from btcd's data", h, len(stored), len(want))
	}
	for i := range want {
		if want[i] != stored[i] {
			return 0, 0, fmt.Errorf("block %d transaction %d: stored tweak %x (max taproot value %d), recomputed %x (%d)", h,
				stored[i].TxIndex, stored[i].Point, stored[i].MaxTaprootValue, want[i].Point, want[i].MaxTaprootValue)
		}
	}
	return len(block.Transactions), len(want), nil
}
