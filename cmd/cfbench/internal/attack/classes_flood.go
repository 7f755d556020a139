package attack

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/cfindexd/cfindexd/internal/attackwire"
	"github.com/cfindexd/cfindexd/internal/p2pclient"
)

// floodClasses are the first classes: floods, huge counts, non-readers,
// slot filling, idle and slow HTTP clients, block downloads.
func floodClasses() []Class {
	return []Class{
		{
			Name: "counts-before-verack", OpsUnit: "frames",
			Title: "huge declared counts (tx outputs/inputs/witness, inv, getdata, notfound, headers, addr, …) right after version, before verack, every kind per connection, 8 connections",
			Home:  "127.10.0.1",
			Run: func(ctx context.Context, env Env, t *Tally) {
				frames := hugeCountFrames(env)
				workers(ctx, 8, func(ctx context.Context, i, round int) {
					c := dial(ctx, env, ipIn(10, i*10_000+round), t)
					if c == nil {
						return
					}
					defer c.close()
					// version first: with BIP-324 v2 on, a first frame that is
					// not version is read as the start of a v2 handshake, and
					// the v1 decoders this class is about would never see it.
					if c.send(c.c.VersionMessage(p2pclient.HandshakeOptions{UserAgent: "/cfbench-hostile:0.1/"})) != nil {
						return
					}
					k := (i + round) % len(frames)
					if c.write(bytes.Join(append(slices.Clone(frames[k:]), frames[:k]...), nil)) == nil {
						t.Ops.Add(int64(len(frames)))
					}
					c.closedWithin(2 * time.Second)
				})
			},
		},
		{
			Name: "counts-after-verack", OpsUnit: "frames",
			Title: "the same huge declared counts after verack (relaytx on), every kind per connection, 16 connections",
			Flags: []string{"--relaytx=true"},
			Home:  "127.11.0.1",
			Run: func(ctx context.Context, env Env, t *Tally) {
				frames := hugeCountFrames(env)
				workers(ctx, 16, func(ctx context.Context, i, round int) {
					c := connect(ctx, env, ipIn(11, i*10_000+round), true, t)
					if c == nil {
						return
					}
					defer c.close()
					k := (i + round) % len(frames)
					if c.write(bytes.Join(append(slices.Clone(frames[k:]), frames[:k]...), nil)) == nil {
						t.Ops.Add(int64(len(frames)))
					}
					c.closedWithin(2 * time.Second)
				})
			},
		},
		{
			Name: "getcfilters-nonreaders", OpsUnit: "getcfilters",
			Title: "120 peers pipeline 10 getcfilters of the longest range each and never read",
			Home:  "127.20.0.1",
			Run: func(ctx context.Context, env Env, t *Tally) {
				tip := env.tip()
				first := tip - min(tip, 999)
				msg := wire.NewMsgGetCFilters(wire.GCSFilterRegular, first, &env.Hashes[tip])
				workers(ctx, 120, func(ctx context.Context, i, round int) {
					c := connect(ctx, env, ipSpread(20, i), false, t)
					if c == nil {
						return
					}
					for range 10 {
						if c.send(msg) != nil {
							break
						}
						t.Ops.Add(1)
					}
					// Never read. A ping every few seconds finds out when the
					// server has given up on the connection (the write
					// after its close fails), to come back.
					defer c.close()
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
			Name: "slot-fill", OpsUnit: "connections held",
			Title: "16 addresses (4 per /16) × 8 connections try to take all 125 slots, answer pings, reconnect when evicted",
			Home:  "127.30.0.1", AboutAddress: true, NoEviction: true,
			Run: func(ctx context.Context, env Env, t *Tally) {
				workers(ctx, 128, func(ctx context.Context, i, round int) {
					addr := i / 8
					ip := fmt.Sprintf("127.%d.0.%d", 30+addr/4, 1+addr%4)
					c := connect(ctx, env, ip, false, t)
					if c == nil {
						return
					}
					t.Ops.Add(1)
					holdUntilClosed(ctx, c)
					Pause(ctx, time.Second)
				})
			},
		},
		{
			Name: "http-idle", OpsUnit: "idle connections opened",
			Title: "idle HTTP keep-alive connections (-httpconns, 32 per address), reopened when closed",
			Home:  "127.40.0.1", AboutAddress: true,
			Run: httpIdleAttack,
		},
		{
			Name: "bulk-slow", OpsUnit: "bulk downloads started",
			Title: "8 slow readers of the bulk filters file (40 KiB/s, above the 32 KiB/s minimum), 2 per address",
			Home:  "127.50.0.1",
			Run:   bulkSlowAttack,
		},
		{
			Name: "getdata-blocks", OpsUnit: "blocks",
			Title: "120 peers getdata random blocks, one at a time",
			Home:  "127.60.0.1",
			Run: func(ctx context.Context, env Env, t *Tally) {
				workers(ctx, 120, func(ctx context.Context, i, round int) {
					c := connect(ctx, env, ipSpread(60, i), false, t)
					if c == nil {
						return
					}
					defer c.closeWith(ctx)()
					rng := newRand(uint64(i), uint64(round))
					for ctx.Err() == nil {
						gd := wire.NewMsgGetData()
						_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeWitnessBlock, &env.Hashes[rng.IntN(len(env.Hashes))]))
						if c.send(gd) != nil || c.readUntil(wire.CmdBlock, wire.CmdNotFound) != nil {
							return
						}
						t.Ops.Add(1)
					}
				})
			},
		},
		{
			Name: "inv-50000", OpsUnit: "50,000-entry invs",
			Title: "50,000-entry inv of transactions (relaytx on), 8 peers in a loop",
			Flags: []string{"--relaytx=true"},
			Home:  "127.70.0.1",
			Run: func(ctx context.Context, env Env, t *Tally) {
				workers(ctx, 8, func(ctx context.Context, i, round int) {
					c := connect(ctx, env, ipIn(70, i*10_000+round), true, t)
					if c == nil {
						return
					}
					defer c.closeWith(ctx)()
					go c.drain() // the server's getdata for the transactions
					inv := wire.NewMsgInvSizeHint(50_000)
					for range 50_000 {
						var h chainhash.Hash
						_, _ = rand.Read(h[:])
						_ = inv.AddInvVect(wire.NewInvVect(wire.InvTypeWitnessTx, &h))
					}
					var frame bytes.Buffer
					_, _ = wire.WriteMessageN(&frame, inv, wire.ProtocolVersion, env.Params.Net)
					for ctx.Err() == nil {
						if c.write(frame.Bytes()) != nil {
							return
						}
						t.Ops.Add(1)
					}
				})
			},
		},
		{
			Name: "partial-tx", OpsUnit: "partial frames (3.9 MB each)",
			Title: "3.9 MB of a 4 MB tx frame from 120 peers (relaytx on), then silence",
			Flags: []string{"--relaytx=true"},
			Home:  "127.80.0.1",
			Run: func(ctx context.Context, env Env, t *Tally) {
				const declared, sent = 4_000_000, 3_900_000
				part := append(attackwire.Header(env.Params.Net, wire.CmdTx, declared), make([]byte, sent)...)
				workers(ctx, 120, func(ctx context.Context, i, round int) {
					c := connect(ctx, env, ipSpread(80, i), true, t)
					if c == nil {
						return
					}
					stop := context.AfterFunc(ctx, c.close)
					defer stop()
					_ = c.c.SetWriteDeadline(time.Now().Add(time.Hour))
					if err := c.c.WriteRaw(part); err == nil {
						t.Ops.Add(1)
					}
					for !c.closedWithin(time.Hour) {
					}
					c.close()
					Pause(ctx, time.Second)
				})
			},
		},
		{
			Name: "invalid-then-nat", OpsUnit: "invalid requests",
			Title: "invalid BIP-157 requests from one address in a loop; the well-behaved client is behind the same address",
			Home:  "127.90.0.1", AboutAddress: true,
			Run: func(ctx context.Context, env Env, t *Tally) {
				tip := env.tip()
				invalid := []wire.Message{
					wire.NewMsgGetCFilters(wire.GCSFilterRegular, tip+1, &env.Hashes[tip]), // start above stop
					wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, tip+1, &env.Hashes[tip]),
					wire.NewMsgGetCFCheckpt(wire.FilterType(7), &env.Hashes[tip]), // unknown filter type
				}
				workers(ctx, 4, func(ctx context.Context, i, round int) {
					c := connect(ctx, env, "127.90.0.1", false, t)
					if c == nil {
						return
					}
					defer c.close()
					if c.send(invalid[(i+round)%len(invalid)]) == nil {
						t.Ops.Add(1)
					}
					c.closedWithin(5 * time.Second)
				})
			},
		},
		{
			Name: "getheaders-store", OpsUnit: "headers answers",
			Title: "getheaders from genesis in a loop, 16 peers (the corrupt-page half is offline: the store check below and cmd/cfindexd's store-fault tests)",
			Home:  "127.100.0.1",
			Run: func(ctx context.Context, env Env, t *Tally) {
				workers(ctx, 16, func(ctx context.Context, i, round int) {
					c := connect(ctx, env, ipIn(100, i), false, t)
					if c == nil {
						return
					}
					defer c.closeWith(ctx)()
					gh := wire.NewMsgGetHeaders()
					_ = gh.AddBlockLocatorHash(&env.Hashes[0])
					for ctx.Err() == nil {
						if c.send(gh) != nil || c.readUntil(wire.CmdHeaders) != nil {
							return
						}
						t.Ops.Add(1)
					}
				})
			},
		},
	}
}
