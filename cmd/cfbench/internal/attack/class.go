package attack

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/load"
	"github.com/cfindexd/cfindexd/internal/attackwire"
)

// Env is what an attack class is run against.
type Env struct {
	P2PAddr, HTTPAddr string
	Params            *chaincfg.Params
	Hashes            []chainhash.Hash
	// Expected holds btcd's answers: the classes whose clients are honest
	// (one-subnet-200) check every byte they get against it.
	Expected *load.Expected
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
// the attack's first step, Wrong the answers to honest clients that
// differed from btcd's. Level is a count the class keeps up and down
// (the one-subnet-200 class: its clients connected and served), Peak the
// most it reached.
type Tally struct {
	Ops, Conns, Refused, Wrong atomic.Int64
	Level, Peak                atomic.Int64
}

// raise adds one to Level and keeps Peak up to date.
func (t *Tally) raise() {
	n := t.Level.Add(1)
	for {
		p := t.Peak.Load()
		if n <= p || t.Peak.CompareAndSwap(p, n) {
			return
		}
	}
}

// lower takes one from Level.
func (t *Tally) lower() { t.Level.Add(-1) }

// Class is one kind of attack on the daemon.
type Class struct {
	// Name is the short name (-classes); Title the table's description;
	// OpsUnit what the tally's ops count.
	Name, Title, OpsUnit string
	// Flags are cfindexd flags the class needs (relaytx, peerbloomfilters,
	// maxpeers, maxuploadtarget).
	Flags []string
	// Home is an address the attack dials from: one well-behaved client
	// dials from another address of its /16 and, when AboutAddress (the
	// class is about what one address does), one from Home itself, as
	// behind the attacker's NAT.
	Home         string
	AboutAddress bool
	// AddressAfter, when above 0, is how long after the attack's start the
	// client behind Home starts: what the daemon promises it holds only
	// from then on (a discouraged address displaces only a peer idle for
	// peerpolicy.DiscouragedMinIdle).
	AddressAfter time.Duration
	// FairShare marks the classes about each peer's share of the work:
	// their p99 goal is FairShareP99Goal instead of P99Goal.
	FairShare bool
	// NoEviction is the goal that a well-behaved P2P client, once served
	// on a connection, never loses it.
	NoEviction bool
	// PeakGoal, when above 0, is what the tally's Peak must reach;
	// PeakUnit says what it counts.
	PeakGoal int64
	PeakUnit string
	// Run attacks until ctx ends.
	Run func(ctx context.Context, env Env, t *Tally)
}

// Latency goals of the well-behaved clients, at the 99th percentile.
const (
	FairShareP99Goal = 500 * time.Millisecond
	P99Goal          = 2 * time.Second
)

// P99Goal is the class's latency goal for its well-behaved clients.
func (c Class) P99Goal() time.Duration {
	if c.FairShare {
		return FairShareP99Goal
	}
	return P99Goal
}

// BIP37 reports whether the class runs cfindexd with BIP-37 on, so that
// the honest BIP-37 wallet runs beside it.
func (c Class) BIP37() bool { return slices.Contains(c.Flags, BloomFlag) }

// BloomFlag turns BIP-37 on (docs/configuration.md's peerbloomfilters).
const BloomFlag = "--peerbloomfilters=true"

// Spot is where a well-behaved client dials from.
type Spot struct {
	// Where is "fresh" (a /16 of its own), "subnet" (another address of
	// the attacker's /16) or "address" (the attacker's own address).
	Where string `json:"where"`
	IP    string `json:"ip"`
}

// Spots are the class's well-behaved clients' addresses; i numbers the
// class in the run (each run's fresh /16s differ).
func (c Class) Spots(i int) []Spot {
	spots := []Spot{{"fresh", fmt.Sprintf("127.250.%d.1", 1+i%250)}}
	ip := net.ParseIP(c.Home).To4()
	if ip == nil {
		return spots
	}
	spots = append(spots, Spot{"subnet", fmt.Sprintf("127.%d.251.1", ip[1])})
	if c.AboutAddress {
		spots = append(spots, Spot{"address", c.Home})
	}
	return spots
}

// Classes are the attack classes, in the order the report lists them.
func Classes() []Class {
	return slices.Concat(floodClasses(), fairShareClasses(), bip37Classes(), lockoutClasses())
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
