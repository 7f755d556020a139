package attack

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/btcsuite/btcd/wire/v2"
)

// The maximal filter: BIP-37's largest (36,000 bytes) with its most hash
// functions (50), 95 % of its bits set, so that nearly every script and
// outpoint is hashed 50 times and tested, yet its estimated
// false-positive rate, 0.95^50 ≈ 0.077, passes cfindexd's default
// bloommaxfpr (0.1).
const (
	maximalFilterBytes = 36_000
	maximalHashFuncs   = 50
	maximalFill        = 0.95
)

// maximalFilterLoad is a maximal filter with BLOOM_UPDATE_ALL (each
// matched output's outpoint is added, more work for the next block),
// its bits drawn from rng.
func maximalFilterLoad(rng *rand.Rand) *wire.MsgFilterLoad {
	data := make([]byte, maximalFilterBytes)
	for i := range data {
		for bit := range 8 {
			if rng.Float64() < maximalFill {
				data[i] |= 1 << bit
			}
		}
	}
	return wire.NewMsgFilterLoad(data, maximalHashFuncs, rng.Uint32(), wire.BloomUpdateAll)
}

// filteredBlocksGetData asks for the filtered blocks of heights.
func filteredBlocksGetData(env Env, heights []uint32) *wire.MsgGetData {
	gd := wire.NewMsgGetDataSizeHint(uint(len(heights)))
	for _, h := range heights {
		_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeFilteredBlock, &env.Hashes[h]))
	}
	return gd
}

// upperHalf is a random height of the chain's upper half: the
// mainnet-shaped chain's transaction-rich blocks.
func upperHalf(env Env, rng *rand.Rand) uint32 {
	tip := env.tip()
	return tip/2 + rng.Uint32N(tip-tip/2+1)
}

// bip37Classes are the classes against BIP-37 (cfindexd's
// peerbloomfilters on): the honest wallet runs beside each.
func bip37Classes() []Class {
	return []Class{
		{
			Name: "bip37-maximal", OpsUnit: "filtered blocks",
			Title: "32 BIP-37 peers from 32 /16s with maximal filters (36,000 bytes, 50 hash functions, fill 0.95, under bloommaxfpr) ask filtered blocks, 10 a getdata, continuously",
			Flags: []string{BloomFlag},
			Home:  ipWide(wideBase, 0), FairShare: true,
			Run: func(ctx context.Context, env Env, t *Tally) {
				workers(ctx, 32, func(ctx context.Context, i, round int) {
					rng := newRand(uint64(i), uint64(round))
					c := connect(ctx, env, ipWide(wideBase, i), false, t)
					if c == nil {
						return
					}
					defer c.closeWith(ctx)()
					if c.send(maximalFilterLoad(rng)) != nil {
						return
					}
					heights := make([]uint32, 10)
					for nonce := uint64(1); ctx.Err() == nil; nonce++ {
						for k := range heights {
							heights[k] = upperHalf(env, rng)
						}
						if c.send(filteredBlocksGetData(env, heights)) != nil || c.send(wire.NewMsgPing(nonce)) != nil ||
							c.readUntil(wire.CmdPong) != nil {
							Pause(ctx, time.Second)
							return
						}
						t.Ops.Add(int64(len(heights)))
					}
				})
			},
		},
		{
			Name: "bip37-nonreaders", OpsUnit: "filtered blocks asked",
			Title: "24 BIP-37 peers from 24 /16s with maximal filters ask the filtered blocks of 20 blocks each, no two alike, and never read",
			Flags: []string{BloomFlag},
			Home:  ipWide(wideBase, 0), FairShare: true,
			Run: func(ctx context.Context, env Env, t *Tally) {
				const peers, each = 24, 20
				workers(ctx, peers, func(ctx context.Context, i, round int) {
					c := connect(ctx, env, ipWide(wideBase, i), false, t)
					if c == nil {
						return
					}
					defer c.close()
					if c.send(maximalFilterLoad(newRand(uint64(i), uint64(round)))) != nil {
						return
					}
					// Peer i's blocks are the heights tip-i, tip-i-24, …: no
					// block of one peer is another's, so each pins blocks of
					// its own in the daemon, if anything does.
					var heights []uint32
					for k := range each {
						if d := uint32(i + k*peers); d <= env.tip() {
							heights = append(heights, env.tip()-d)
						}
					}
					if c.send(filteredBlocksGetData(env, heights)) != nil {
						return
					}
					t.Ops.Add(int64(len(heights)))
					// Never read; a ping every few seconds finds out when the
					// server has given up on the connection, to come back.
					for ctx.Err() == nil {
						Pause(ctx, 3*time.Second)
						if c.send(wire.NewMsgPing(uint64(round))) != nil {
							Pause(ctx, time.Second)
							return
						}
					}
				})
			},
		},
		{
			Name: "upload-flood", OpsUnit: "blocks",
			Title: "BIP-37 on, maxuploadtarget 64 MiB: 120 peers from 120 /16s download blocks, one at a time, until the target is reached and past it",
			Flags: []string{BloomFlag, "--maxuploadtarget=64"},
			Home:  ipWide(wideBase, 0),
			Run: func(ctx context.Context, env Env, t *Tally) {
				workers(ctx, 120, func(ctx context.Context, i, round int) {
					c := connect(ctx, env, ipWide(wideBase, i), false, t)
					if c == nil {
						return
					}
					defer c.closeWith(ctx)()
					rng := newRand(uint64(i), uint64(round))
					for ctx.Err() == nil {
						h := rng.Uint32N(env.tip() + 1)
						gd := wire.NewMsgGetData()
						_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeWitnessBlock, &env.Hashes[h]))
						if c.send(gd) != nil || c.readUntil(wire.CmdBlock, wire.CmdNotFound) != nil {
							Pause(ctx, time.Second)
							return
						}
						t.Ops.Add(1)
					}
				})
			},
		},
	}
}
