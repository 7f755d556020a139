package attack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/load"
	"github.com/cfindexd/cfindexd/internal/attackwire"
	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
)

// Addresses of the lockout classes.
const (
	subnetHoldHome = "127.140.0.1"
	oneSubnetBlock = 141
	natAddress     = "127.240.0.1"
)

// lockoutClasses are the classes that try to keep well-behaved clients
// out: by address, by /16, by discouragement, by churn.
func lockoutClasses() []Class {
	return []Class{
		httpPipelineClass(),
		{
			Name: "subnet-hold", OpsUnit: "connections held",
			Title: "one /16 holds 48 connections (6 addresses × 8): 3 addresses pipeline 10 getcfilters each and never read, 3 sit idle; good clients in that /16 and behind its first address",
			Home:  subnetHoldHome, AboutAddress: true, NoEviction: true,
			Run: func(ctx context.Context, env Env, t *Tally) {
				tip := env.tip()
				msg := wire.NewMsgGetCFilters(wire.GCSFilterRegular, tip-min(tip, 999), &env.Hashes[tip])
				workers(ctx, 48, func(ctx context.Context, i, round int) {
					c := connect(ctx, env, fmt.Sprintf("127.140.0.%d", 1+i/8), false, t)
					if c == nil {
						return
					}
					t.Ops.Add(1)
					if i/8 >= 3 {
						holdUntilClosed(ctx, c)
						Pause(ctx, time.Second)
						return
					}
					defer c.close()
					for range 10 {
						if c.send(msg) != nil {
							return
						}
					}
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
			Name: "one-subnet-200", OpsUnit: "answers checked",
			Title: "maxpeers 400: 200 honest clients from one /16 (50 addresses × 4) connect, then each asks filters and filter headers every second, every byte checked",
			Flags: []string{"--maxpeers=400"},
			Home:  fmt.Sprintf("127.%d.0.1", oneSubnetBlock), NoEviction: true,
			PeakGoal: 200, PeakUnit: "clients connected and served at once",
			Run: func(ctx context.Context, env Env, t *Tally) {
				workers(ctx, 200, func(ctx context.Context, i, round int) {
					honestClient(ctx, env, fmt.Sprintf("127.%d.0.%d", oneSubnetBlock, 1+i/4), uint64(i)<<20+uint64(round), t)
				})
			},
		},
		{
			Name: "discouraged-nat", OpsUnit: "malformed pings",
			// cfindexd lets a discouraged address displace only a peer
			// idle for peerpolicy.DiscouragedMinIdle: the client behind the
			// address starts once the first idle peers have been idle that
			// long (AddressAfter), and with a -duration shorter than that
			// it never runs (the class then misses its goal, by design).
			Title: "124 idle peers from 124 /16s keep the slots full; one address sends a 9-byte ping and is discouraged; good clients behind it and in its /16",
			Home:  natAddress, AboutAddress: true, NoEviction: true,
			AddressAfter: peerpolicy.DiscouragedMinIdle + 10*time.Second,
			Run: func(ctx context.Context, env Env, t *Tally) {
				malformed := attackwire.Frame(env.Params.Net, wire.CmdPing, make([]byte, 9))
				workers(ctx, 125, func(ctx context.Context, i, round int) {
					if i < 124 {
						holdIdle(ctx, env, ipWide(wideBase, i), t)
						return
					}
					c := connect(ctx, env, natAddress, false, t)
					if c == nil {
						return
					}
					defer c.close()
					if c.write(malformed) == nil {
						t.Ops.Add(1)
					}
					c.closedWithin(5 * time.Second)
					Pause(ctx, time.Second)
				})
			},
		},
		{
			Name: "eviction-churn", OpsUnit: "newcomers",
			Title: "122 idle peers from 122 /16s fill the slots; 10 newcomers a second from those /16s each hold a slot until evicted; the good clients are persistent newcomers",
			Home:  ipWide(wideBase, 0), NoEviction: true,
			Run: func(ctx context.Context, env Env, t *Tally) {
				var wg sync.WaitGroup
				defer wg.Wait()
				wg.Go(func() {
					workers(ctx, 122, func(ctx context.Context, i, round int) { holdIdle(ctx, env, ipWide(wideBase, i), t) })
				})
				tick := time.NewTicker(100 * time.Millisecond)
				defer tick.Stop()
				for k := 0; ; k++ {
					select {
					case <-ctx.Done():
						return
					case <-tick.C:
					}
					ip := fmt.Sprintf("127.%d.%d.1", wideBase+k%122, 1+(k/122)%250)
					wg.Go(func() {
						if c := connect(ctx, env, ip, false, t); c != nil {
							t.Ops.Add(1)
							holdUntilClosed(ctx, c)
						}
					})
				}
			},
		},
	}
}

// holdIdle connects from ip, holds the connection (answering pings, never
// asking anything) until the server closes it, and pauses a second.
func holdIdle(ctx context.Context, env Env, ip string, t *Tally) {
	if c := connect(ctx, env, ip, false, t); c != nil {
		holdUntilClosed(ctx, c)
	}
	Pause(ctx, time.Second)
}

// honestRequestPause is how long an honest client of one-subnet-200
// waits between requests.
const honestRequestPause = time.Second

// honestClient is one of one-subnet-200's honest clients: it connects
// from ip and asks 10 filters and 100 filter headers in turn, a request a
// second, every answer checked against env.Expected. The tally's Level
// counts it from its first answer to the loss of its connection; Ops
// counts its answers, Wrong those that differed from btcd's.
func honestClient(ctx context.Context, env Env, ip string, nonce uint64, t *Tally) {
	p, err := load.DialFrom(env.P2PAddr, ip, env.Params, nonce, hostileIOTimeout)
	if err != nil {
		if ctx.Err() == nil {
			t.Refused.Add(1)
		}
		Pause(ctx, time.Second)
		return
	}
	t.Conns.Add(1)
	defer context.AfterFunc(ctx, func() { p.Close() })()
	defer p.Close()
	rng := newRand(nonce, 3)
	served := false
	defer func() {
		if served {
			t.lower()
		}
	}()
	tip := env.tip()
	for k := 0; ctx.Err() == nil; k++ {
		first := rng.Uint32N(tip + 1)
		_ = p.SetDeadline(time.Now().Add(goodRequestTimeout))
		if k%2 == 0 {
			_, _, err = p.GetCFilters(env.Expected, first, min(first+9, tip))
		} else {
			_, _, err = p.GetCFHeaders(env.Expected, first, min(first+99, tip))
		}
		if err != nil {
			if ctx.Err() == nil {
				if !lostConnection(err) {
					t.Wrong.Add(1)
				}
				t.Refused.Add(1)
				Pause(ctx, time.Second)
			}
			return
		}
		t.Ops.Add(1)
		if !served {
			served = true
			t.raise()
		}
		Pause(ctx, honestRequestPause)
	}
}

// lostConnection reports whether err is the connection ending or timing
// out, not a wrong answer.
func lostConnection(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.As(err, &ne)
}
