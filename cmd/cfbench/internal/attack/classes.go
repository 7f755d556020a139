package attack

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/attackwire"
)

// Env is what an attack class is run against.
type Env struct {
	P2PAddr, HTTPAddr string
	Params            *chaincfg.Params
	Hashes            []chainhash.Hash
	// HTTPConns is how many idle HTTP connections the http-idle class
	// holds (the -httpconns flag, bounded by this process's open file
	// limit).
	HTTPConns int
}

// tip is the chain's last height.
func (e Env) tip() uint32 { return uint32(len(e.Hashes) - 1) }

// Tally counts what an attack did: Ops are its unit of work (frames,
// requests, connections held; the class's OpsUnit says which), Conns the
// connections it opened, Refused those the daemon refused or cut before
// the attack's first step.
type Tally struct {
	Ops, Conns, Refused atomic.Int64
}

// Class is one kind of attack on the daemon.
type Class struct {
	// Name is the short name (-classes); Title the table's description;
	// OpsUnit what the tally's ops count.
	Name, Title, OpsUnit string
	// Flags are cfindexd flags the class needs (relaytx).
	Flags []string
	// GoodIP is the well-behaved client's source address: a fresh one,
	// or, for the class about one address's misbehaviour, the attacker's.
	GoodIP string
	// Run attacks until ctx ends.
	Run func(ctx context.Context, env Env, t *Tally)
}

// Source addresses: every class has its own 127.b.0.0/16 block (or
// blocks), the well-behaved clients 127.250.c.1.
//
// ipIn is the n-th address of block b: 127.b.(n/250).(1 + n%250), n taken
// modulo 62,500 (250 × 250).
func ipIn(b, n int) string {
	n %= 250 * 250
	return fmt.Sprintf("127.%d.%d.%d", b, n/250, 1+n%250)
}

// ipSpread is the i-th of addresses spread 30 to an IPv4 /16 from
// 127.b.0.0/16 on: many peers, each from an address of its own, and no
// netgroup past maxpeerspersubnet (32), the eviction level beyond which a
// full server evicts a netgroup's idle peers first, so eviction cannot
// single these out by netgroup (it never refuses them either way).
func ipSpread(b, i int) string {
	return fmt.Sprintf("127.%d.%d.1", b+i/30, i%30)
}

// workers runs n goroutines, each calling attack in rounds until ctx ends,
// and waits for them.
func workers(ctx context.Context, n int, attack func(ctx context.Context, i, round int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for round := 0; ctx.Err() == nil; round++ {
				attack(ctx, i, round)
			}
		})
	}
	wg.Wait()
}

// Pause sleeps d or until ctx ends.
func Pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// holdUntilClosed waits until the server closes c or ctx ends, then
// closes c.
func holdUntilClosed(ctx context.Context, c *rawConn) {
	stop := context.AfterFunc(ctx, c.close)
	defer stop()
	c.drain()
	c.close()
}

// dial connects from ip without a handshake, counting the connection (and
// a refusal, after which it pauses a second); nil when it failed.
func dial(ctx context.Context, env Env, ip string, t *Tally) *rawConn {
	c, err := dialFrom(ctx, env.P2PAddr, ip, env.Params.Net)
	if err != nil {
		t.Refused.Add(1)
		Pause(ctx, time.Second)
		return nil
	}
	t.Conns.Add(1)
	return c
}

// connect dials from ip and completes the handshake, counting the
// connection (and a refusal); nil when it failed.
func connect(ctx context.Context, env Env, ip string, relay bool, t *Tally) *rawConn {
	c := dial(ctx, env, ip, t)
	if c == nil {
		return nil
	}
	if err := c.handshake(relay); err != nil {
		c.close()
		t.Refused.Add(1)
		Pause(ctx, time.Second)
		return nil
	}
	return c
}

// hugeCountFrames are attackwire's huge-count payloads framed for env,
// in a fixed order.
func hugeCountFrames(env Env) [][]byte {
	payloads := attackwire.HugeCountPayloads()
	var frames [][]byte
	for _, name := range slices.Sorted(maps.Keys(payloads)) {
		frames = append(frames, attackwire.Frame(env.Params.Net, attackwire.CommandOf(name), payloads[name]))
	}
	return frames
}

// Classes are the attack classes, in the order the report lists them.
func Classes() []Class {
	return []Class{
		{
			Name: "counts-before-verack", OpsUnit: "frames",
			Title:  "huge declared counts (tx outputs/inputs/witness, inv, getdata, notfound, headers, addr, …) as the first frame, 8 connections",
			GoodIP: "127.250.1.1",
			Run: func(ctx context.Context, env Env, t *Tally) {
				frames := hugeCountFrames(env)
				workers(ctx, 8, func(ctx context.Context, i, round int) {
					c := dial(ctx, env, ipIn(10, i*10_000+round), t)
					if c == nil {
						return
					}
					defer c.close()
					if c.write(frames[(i+round)%len(frames)]) == nil {
						t.Ops.Add(1)
					}
					c.closedWithin(2 * time.Second)
				})
			},
		},
		{
			Name: "counts-after-verack", OpsUnit: "frames",
			Title:  "the same huge declared counts after verack (relaytx on), every kind per connection, 16 connections",
			Flags:  []string{"--relaytx=true"},
			GoodIP: "127.250.2.1",
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
			Title:  "120 peers pipeline 10 getcfilters of the longest range each and never read",
			GoodIP: "127.250.3.1",
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
			Title:  "16 addresses (4 per /16) × 8 connections try to take all 125 slots, answer pings, reconnect when evicted",
			GoodIP: "127.250.4.1",
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
			Title:  "idle HTTP keep-alive connections (-httpconns, 32 per address), reopened when closed",
			GoodIP: "127.250.5.1",
			Run:    httpIdleAttack,
		},
		{
			Name: "bulk-slow", OpsUnit: "bulk downloads started",
			Title:  "8 slow readers of the bulk filters file (40 KiB/s, above the 32 KiB/s minimum), 2 per address",
			GoodIP: "127.250.6.1",
			Run:    bulkSlowAttack,
		},
		{
			Name: "getdata-blocks", OpsUnit: "blocks",
			Title:  "120 peers getdata random blocks, one at a time",
			GoodIP: "127.250.7.1",
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
			Title:  "50,000-entry inv of transactions (relaytx on), 8 peers in a loop",
			Flags:  []string{"--relaytx=true"},
			GoodIP: "127.250.8.1",
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
			Title:  "3.9 MB of a 4 MB tx frame from 120 peers (relaytx on), then silence",
			Flags:  []string{"--relaytx=true"},
			GoodIP: "127.250.9.1",
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
			Title:  "invalid BIP-157 requests from one address in a loop; the well-behaved client is behind the same address",
			GoodIP: "127.90.0.1",
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
			Title:  "getheaders from genesis in a loop, 16 peers (the corrupt-page half is offline: the store check below and cmd/cfindexd's store-fault tests)",
			GoodIP: "127.250.11.1",
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

// httpIdleAttack holds env.HTTPConns HTTP connections, each idle after
// one request, from addresses of 32 connections each, and reopens those
// the server closes after a pause.
func httpIdleAttack(ctx context.Context, env Env, t *Tally) {
	dials := make(chan struct{}, 128) // dials in progress at once
	workers(ctx, env.HTTPConns, func(ctx context.Context, i, round int) {
		if round > 0 {
			Pause(ctx, time.Second)
		}
		dials <- struct{}{}
		d := net.Dialer{Timeout: hostileIOTimeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ipIn(40, i/32))}}
		conn, err := d.DialContext(ctx, "tcp", env.HTTPAddr)
		<-dials
		if err != nil {
			t.Refused.Add(1)
			return
		}
		t.Conns.Add(1)
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		defer stop()
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(hostileIOTimeout))
		if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: cfindexd\r\n\r\n"); err != nil {
			return
		}
		rd := bufio.NewReaderSize(conn, 512)
		resp, err := http.ReadResponse(rd, nil)
		if err != nil {
			t.Refused.Add(1)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Refused.Add(1)
			return
		}
		t.Ops.Add(1)
		// Idle until the server closes the connection.
		_ = conn.SetDeadline(time.Time{})
		_, _ = rd.ReadByte()
	})
}

// bulkSlowRate is how fast the bulk-slow attackers read: just above the
// server's default minimum transfer rate (httpbulkminrate, 32 KiB/s), so
// each holds its slot as long as it can.
const bulkSlowRate = 40 << 10

// bulkSlowAttack has 8 clients, 2 per address, download the first bulk
// filters file at bulkSlowRate, starting over when it ends or is cut.
func bulkSlowAttack(ctx context.Context, env Env, t *Tally) {
	workers(ctx, 8, func(ctx context.Context, i, round int) {
		d := net.Dialer{Timeout: hostileIOTimeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ipIn(50, i/2))}}
		conn, err := d.DialContext(ctx, "tcp", env.HTTPAddr)
		if err != nil {
			t.Refused.Add(1)
			Pause(ctx, time.Second)
			return
		}
		t.Conns.Add(1)
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		defer stop()
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(hostileIOTimeout))
		if _, err := io.WriteString(conn, "GET /bulk/filters/0.bin HTTP/1.1\r\nHost: cfindexd\r\n\r\n"); err != nil {
			return
		}
		rd := bufio.NewReaderSize(conn, 4<<10)
		resp, err := http.ReadResponse(rd, nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Refused.Add(1)
			Pause(ctx, time.Second)
			return
		}
		t.Ops.Add(1)
		_ = conn.SetDeadline(time.Time{})
		buf := make([]byte, bulkSlowRate/10)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			if _, err := io.ReadFull(resp.Body, buf); err != nil {
				return
			}
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	})
}
