package attack

import (
	"context"
	"time"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/p2p/v2conn"
)

// v2Classes attack BIP-324's own surface (issue 18): the handshake's CPU
// (ElligatorSwift, ECDH), its garbage, the packet lengths and decoys. Each
// runs a well-behaved client over v2 beside the v1 ones (V2Client).
func v2Classes() []Class {
	return []Class{
		{
			Name: "v2-handshake-flood", OpsUnit: "v2 keys sent",
			Title: "v2 handshakes from 64 addresses in 8 /16s: 48 send a 64-byte key and stall, 16 complete the handshake (an ECDH each side) and hang up, over and over",
			Home:  "127.160.0.1", V2Client: true,
			Run: func(ctx context.Context, env Env, t *Tally) {
				workers(ctx, 64, func(ctx context.Context, i, round int) {
					ip := ipIn(160+i%8, i*10_000+round)
					if i%4 == 0 {
						if c := connectV2(ctx, env, ip, false, t); c != nil {
							t.Ops.Add(1)
							c.close()
						}
						return
					}
					nc := dialSocket(ctx, env, ip, t)
					if nc == nil {
						return
					}
					defer nc.Close()
					stop := context.AfterFunc(ctx, func() { nc.Close() })
					defer stop()
					_ = nc.SetWriteDeadline(time.Now().Add(hostileIOTimeout))
					if _, err := nc.Write(randomBytes(v2conn.KeySize)); err == nil {
						t.Ops.Add(1)
					}
					closedWithin(nc, 5*time.Minute) // the server's handshake deadline ends it
				})
			},
		},
		{
			Name: "v2-garbage", OpsUnit: "garbage connections",
			Title: "64 connections (3 /16s) send a key and 4,096–5,095 bytes of garbage without its terminator, half at once, half 64 bytes every 100 ms",
			Home:  "127.170.0.1", V2Client: true,
			Run: func(ctx context.Context, env Env, t *Tally) {
				workers(ctx, 64, func(ctx context.Context, i, round int) {
					nc := dialSocket(ctx, env, ipSpread(170, i), t)
					if nc == nil {
						return
					}
					defer nc.Close()
					stop := context.AfterFunc(ctx, func() { nc.Close() })
					defer stop()
					garbage := randomBytes(v2conn.KeySize + v2conn.MaxGarbage + 1 + (i*37+round)%1000)
					step := len(garbage)
					if i%2 == 1 {
						step = 64
					}
					for len(garbage) > 0 && ctx.Err() == nil {
						n := min(step, len(garbage))
						_ = nc.SetWriteDeadline(time.Now().Add(hostileIOTimeout))
						if _, err := nc.Write(garbage[:n]); err != nil {
							break // the server gave up on us: what the class wants
						}
						garbage = garbage[n:]
						if len(garbage) > 0 {
							Pause(ctx, 100*time.Millisecond)
						}
					}
					t.Ops.Add(1)
					closedWithin(nc, 2*time.Minute)
				})
			},
		},
		{
			Name: "v2-huge-length", OpsUnit: "16 MiB lengths",
			Title: "16 connections complete the v2 handshake (half the version exchange too), then declare a 16 MiB packet and send nothing more",
			Home:  "127.180.0.1", V2Client: true,
			Run: func(ctx context.Context, env Env, t *Tally) {
				workers(ctx, 16, func(ctx context.Context, i, round int) {
					c := connectV2(ctx, env, ipIn(180, i*10_000+round), round%2 == 1, t)
					if c == nil {
						return
					}
					defer c.close()
					_ = c.nc.SetWriteDeadline(time.Now().Add(hostileIOTimeout))
					if _, err := c.v2.WriteLengthOnly(1<<24 - 1); err == nil {
						t.Ops.Add(1)
					}
					closedWithin(c.nc, 2*time.Second)
				})
			},
		},
		{
			Name: "v2-decoys", OpsUnit: "decoy packets",
			Title: "16 v2 peers stream 16 KiB decoy packets after verack: half with a ping every 512 KiB (under the decoy bound), half without",
			Home:  "127.190.0.1", V2Client: true,
			Run: func(ctx context.Context, env Env, t *Tally) {
				decoy := make([]byte, 16<<10)
				workers(ctx, 16, func(ctx context.Context, i, round int) {
					c := connectV2(ctx, env, ipIn(190, i*10_000+round), true, t)
					if c == nil {
						return
					}
					defer c.close()
					stop := context.AfterFunc(ctx, c.close)
					defer stop()
					c.drainInBackground()
					for n := 1; ctx.Err() == nil; n++ {
						_ = c.nc.SetWriteDeadline(time.Now().Add(hostileIOTimeout))
						if _, err := c.v2.WriteDecoy(decoy); err != nil {
							return
						}
						t.Ops.Add(1)
						if i%2 == 0 && n%32 == 0 && c.send(wire.NewMsgPing(uint64(n))) != nil {
							return
						}
					}
				})
			},
		},
	}
}
