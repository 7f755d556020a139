package attack

import (
	"context"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/wire/v2"
)

// ipWide is the i-th of addresses each in a /16 of its own from
// 127.b.0.0/16 on (wrapping below 127.255): peers that no per-netgroup
// rule can tell from a crowd of separate hosts.
func ipWide(b, i int) string {
	return fmt.Sprintf("127.%d.0.1", b+i%(255-b))
}

// wideBase is the first /16 of the classes whose peers each come from a
// /16 of their own (up to 124 of them, below the good clients' 127.250).
const wideBase = 110

// fairShareClasses are the classes about each peer's share of the
// daemon's work: honest-looking peers that ask a lot and read all of it.
func fairShareClasses() []Class {
	return []Class{
		{
			Name: "getcfilters-readers", OpsUnit: "getcfilters answered",
			Title: "120 peers from 120 /16s pipeline getcfilters of the longest range (4 deep) and read as fast as they can",
			Home:  ipWide(wideBase, 0), FairShare: true,
			Run: func(ctx context.Context, env Env, t *Tally) {
				tip := env.tip()
				first := tip - min(tip, wire.MaxGetCFiltersReqRange-1)
				msg := wire.NewMsgGetCFilters(wire.GCSFilterRegular, first, &env.Hashes[tip])
				workers(ctx, 120, func(ctx context.Context, i, round int) {
					readingPipeline(ctx, env, ipWide(wideBase, i), t, 4, int(tip-first+1),
						func(cmd string) bool { return cmd == wire.CmdCFilter },
						func(int) wire.Message { return msg })
				})
			},
		},
		{
			Name: "tiny-requests", OpsUnit: "one-block requests answered",
			Title: "120 peers from 120 /16s send getcfheaders and getcfilters of one block each, 8 in flight, reading every answer",
			Home:  ipWide(wideBase, 0), FairShare: true,
			Run: func(ctx context.Context, env Env, t *Tally) {
				workers(ctx, 120, func(ctx context.Context, i, round int) {
					rng := newRand(uint64(i), uint64(round))
					readingPipeline(ctx, env, ipWide(wideBase, i), t, 8, 1,
						func(cmd string) bool { return cmd == wire.CmdCFilter || cmd == wire.CmdCFHeaders },
						func(k int) wire.Message {
							h := rng.Uint32N(env.tip() + 1)
							if k%2 == 0 {
								return wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, h, &env.Hashes[h])
							}
							return wire.NewMsgGetCFilters(wire.GCSFilterRegular, h, &env.Hashes[h])
						})
				})
			},
		},
	}
}

// readingPipeline connects from ip and keeps depth requests in flight
// (next(k) is the k-th) for as long as ctx lasts, reading every frame:
// each request is answered by framesPer frames that answer accepts, and
// each answered request counts one op and sends the next. It returns
// when the server closes the connection (after a pause) or ctx ends.
func readingPipeline(ctx context.Context, env Env, ip string, t *Tally, depth, framesPer int, answer func(cmd string) bool, next func(k int) wire.Message) {
	c := connect(ctx, env, ip, false, t)
	if c == nil {
		return
	}
	defer c.closeWith(ctx)()
	sent := 0
	for ; sent < depth; sent++ {
		if c.send(next(sent)) != nil {
			return
		}
	}
	frames := 0
	for ctx.Err() == nil {
		cmd, _, err := c.readCommand(time.Minute)
		if err != nil {
			Pause(ctx, time.Second)
			return
		}
		if !answer(cmd) {
			continue
		}
		if frames++; frames < framesPer {
			continue
		}
		frames = 0
		t.Ops.Add(1)
		if c.send(next(sent)) != nil {
			return
		}
		sent++
	}
}
