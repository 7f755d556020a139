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
// run at once, granted in arrival order (a peer has one request in
// progress, so peers take turns), and their time is charged to a token
// bucket that refills at share·GOMAXPROCS seconds per second. A piece of
// work starts only while the bucket is not in debt; its wall time is
// charged when it ends (wall time is CPU time unless the machine is
// overloaded, when charging more is the right side to err on).
//
// Safe for concurrent use.
type WorkMeter struct {
	rate  float64 // nanoseconds of work per nanosecond
	burst float64 // bucket size in nanoseconds
	slots int     // pieces of work at once
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error

	mu      sync.Mutex
	tokens  float64 // nanoseconds; negative is debt
	last    time.Time
	running int
	waiters []chan struct{}
	// spent is the work charged so far, for metrics and tests.
	spent time.Duration
}

// NewWorkMeter returns a meter for share of procs cores.
func NewWorkMeter(share float64, procs int, now func() time.Time) *WorkMeter {
	cores := share * float64(procs)
	return &WorkMeter{
		rate:   cores,
		burst:  cores * float64(WorkBurst),
		slots:  max(1, int(math.Ceil(cores))),
		now:    now,
		sleep:  sleepCtx,
		tokens: cores * float64(WorkBurst),
	}
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

// Acquire waits for a slot and for the bucket to be out of debt, then
// returns done, which charges the work's time and frees the slot (call it
// exactly once).
func (w *WorkMeter) Acquire(ctx context.Context) (done func(), err error) {
	if err := w.takeSlot(ctx); err != nil {
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
			w.releaseSlot()
			return nil, err
		}
	}
	start := w.now()
	return func() {
		took := w.now().Sub(start)
		w.mu.Lock()
		w.refillLocked(w.now())
		w.tokens -= float64(took)
		w.spent += took
		w.mu.Unlock()
		w.releaseSlot()
	}, nil
}

// takeSlot waits for one of the slots, in arrival order.
func (w *WorkMeter) takeSlot(ctx context.Context) error {
	w.mu.Lock()
	if len(w.waiters) == 0 && w.running < w.slots {
		w.running++
		w.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	w.waiters = append(w.waiters, ch)
	w.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		w.mu.Lock()
		defer w.mu.Unlock()
		for i, c := range w.waiters {
			if c == ch {
				w.waiters = append(w.waiters[:i], w.waiters[i+1:]...)
				return ctx.Err()
			}
		}
		// Granted meanwhile: pass the slot on.
		w.running--
		w.grantLocked()
		return ctx.Err()
	}
}

func (w *WorkMeter) releaseSlot() {
	w.mu.Lock()
	w.running--
	w.grantLocked()
	w.mu.Unlock()
}

func (w *WorkMeter) grantLocked() {
	for len(w.waiters) > 0 && w.running < w.slots {
		ch := w.waiters[0]
		w.waiters[0] = nil
		w.waiters = w.waiters[1:]
		w.running++
		close(ch)
	}
}

// Charge adds d of work done outside a slot (what a piece of work costs
// the rest of the server: its answer's frames written to the socket),
// which later pieces wait for.
func (w *WorkMeter) Charge(d time.Duration) {
	w.mu.Lock()
	w.refillLocked(w.now())
	w.tokens -= float64(d)
	w.spent += d
	w.mu.Unlock()
}
