package peerpolicy

import (
	"context"
	"math"
	"sync"
	"time"
)

// WorkBurst is how much CPU time BIP-37 work may run ahead of its
// share (per core of the share): a burst of new-block requests from many
// wallets is served at once, a sustained load at the share.
const WorkBurst = 250 * time.Millisecond

// WorkMeter bounds BIP-37 work (decoding blocks, hashing txids, matching
// filters) across all peers, so that a hundred BIP-37 peers cannot take
// the CPU BIP-157 peers and the indexer need: at most slots pieces of work
// run at once, granted through a FairQueue to the peer with the least
// recent work (each peer has a WorkShare), and their time is charged to a
// token bucket that refills at share·GOMAXPROCS seconds per second. A
// piece of work starts only while the bucket is not in debt; its time is
// charged when it ends, to the bucket and to the peer's share: its wall
// time, or the CPU time its thread spent on it (ChargeThreadCPU). So a
// peer whose filter is expensive (a 36,000-byte filter of 50 hash
// functions costs 50 hashes per element) is charged for that time and
// gets its share of the CPU, not more: a wallet asking for a few blocks
// now and then is served ahead of it.
//
// Safe for concurrent use.
type WorkMeter struct {
	rate  float64 // nanoseconds of work per nanosecond
	burst float64 // bucket size in nanoseconds
	slots *FairQueue
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
	// cpu, when set (ChargeThreadCPU), reads the thread's CPU time for
	// what a piece is charged to its peer.
	cpu func() (time.Duration, int, bool)

	mu     sync.Mutex
	tokens float64 // nanoseconds; negative is debt
	last   time.Time
	// spent is the work charged so far, for metrics and tests.
	spent time.Duration
}

// WorkHalfLife is how fast the BIP-37 work a peer was given is forgotten
// when the meter picks whom to serve next.
const WorkHalfLife = 10 * time.Second

// WorkShare is one peer's account in a WorkMeter (NewShare).
type WorkShare struct{ share *Share }

// NewShare returns the account of a new peer.
func (w *WorkMeter) NewShare() *WorkShare { return &WorkShare{share: w.slots.NewShare()} }

// NewWorkMeter returns a meter for share of procs cores.
func NewWorkMeter(share float64, procs int, now func() time.Time) *WorkMeter {
	cores := share * float64(procs)
	return &WorkMeter{
		rate:   cores,
		burst:  cores * float64(WorkBurst),
		slots:  NewFairQueue(int(math.Ceil(cores)), WorkHalfLife, WallClock(now)),
		now:    now,
		sleep:  sleepCtx,
		tokens: cores * float64(WorkBurst),
	}
}

// ChargeThreadCPU has the meter charge each piece of work, to its peer
// and to the bucket, at the CPU time its thread spent on it rather than
// its wall time (when the piece ran on one thread throughout and the
// platform can tell, else at its wall time): the share is a share of the
// CPU. On a busy machine a piece's wall time includes whatever the
// operating system ran meanwhile: a wallet's 1 ms of matching preempted
// for 50 ms would be charged as 50 times its work and sent behind every
// peer with a costly filter for its next request, and a decoding
// preempted the same way would leave every peer waiting for the bucket to
// repay time nobody worked. Returns w.
func (w *WorkMeter) ChargeThreadCPU() *WorkMeter {
	w.cpu = threadCPU
	return w
}

// sleepCtx sleeps for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// refillLocked adds the tokens earned since the last call.
func (w *WorkMeter) refillLocked(now time.Time) {
	if !w.last.IsZero() {
		if dt := now.Sub(w.last); dt > 0 {
			w.tokens = min(w.burst, w.tokens+float64(dt)*w.rate)
		}
	}
	w.last = now
}

// Acquire waits for a slot for the peer of ws and for the bucket to be
// out of debt, then returns done, which charges the work's time to the
// bucket and the peer and frees the slot (call it exactly once).
func (w *WorkMeter) Acquire(ctx context.Context, ws *WorkShare) (done func(), err error) {
	return w.acquire(ctx, ws, true)
}

// AcquireShared is Acquire for work done for every peer rather than for
// the peer of ws (the first decoding of a recent block, which every peer
// following the chain reads; its caller bounds how much there is): it
// waits ahead of every peer's own work, and its time is charged to the
// bucket (the CPU share holds) but not to the peer.
func (w *WorkMeter) AcquireShared(ctx context.Context, ws *WorkShare) (done func(), err error) {
	return w.acquire(ctx, ws, false)
}

// acquire is Acquire, or AcquireShared when not toPeer.
func (w *WorkMeter) acquire(ctx context.Context, ws *WorkShare, toPeer bool) (done func(), err error) {
	acquire := ws.share.Acquire
	if !toPeer {
		acquire = ws.share.AcquireAhead
	}
	if err := acquire(ctx); err != nil {
		return nil, err
	}
	for {
		w.mu.Lock()
		now := w.now()
		w.refillLocked(now)
		debt := -w.tokens
		w.mu.Unlock()
		if debt <= 0 {
			break
		}
		if err := w.sleep(ctx, time.Duration(debt/w.rate)+time.Millisecond); err != nil {
			ws.share.Release(0)
			return nil, err
		}
		// A peer with less work may have queued while this one slept:
		// the slot goes to it, and this peer queues again. So the work
		// that starts when the debt is paid is the least served peer's
		// at that moment, not the one picked when the last piece ended.
		if toPeer && ws.share.Overtaken() {
			ws.share.Release(0)
			if err := acquire(ctx); err != nil {
				return nil, err
			}
		}
	}
	start := w.now()
	var cpu0 time.Duration
	var tid0 int
	onCPU := false
	if w.cpu != nil {
		cpu0, tid0, onCPU = w.cpu()
	}
	return func() {
		took := w.now().Sub(start)
		charged := took
		if onCPU {
			if cpu1, tid1, ok := w.cpu(); ok && tid1 == tid0 && cpu1 >= cpu0 {
				charged = min(took, cpu1-cpu0)
			}
		}
		w.mu.Lock()
		w.refillLocked(w.now())
		w.tokens -= float64(charged)
		w.spent += charged
		w.mu.Unlock()
		if !toPeer {
			charged = 0
		}
		ws.share.Release(float64(charged))
	}, nil
}

// Charge adds d of work done outside a slot for the peer of ws (what a
// piece of work costs the rest of the server: its answer's frames written
// to the socket), which later pieces wait for.
func (w *WorkMeter) Charge(ws *WorkShare, d time.Duration) {
	w.mu.Lock()
	w.refillLocked(w.now())
	w.tokens -= float64(d)
	w.spent += d
	w.mu.Unlock()
	ws.share.Charge(float64(d))
}

// Waiting returns how many pieces of work wait for a slot.
func (w *WorkMeter) Waiting() int { return w.slots.Waiting() }
