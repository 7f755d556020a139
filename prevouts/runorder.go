package prevouts

import (
	"context"
	"sync"
)

// RunOrder hands out the turns of the runs of one catch-up, in chain order.
// A run fetched with a turn lets its transactions into the source's script
// cache only after the runs before it did theirs, so no run asks the node
// for an output that an earlier run, fetched at the same time by another
// worker, is about to deliver: catching up from genesis then asks the node
// only for outputs older than the cache holds. Turns only order work; a run
// whose turn never comes cannot block others for good, because a failed
// or abandoned run ends its turn (RunTurn.Done) and waits end with their
// context. Safe for concurrent use; create one per catch-up round.
type RunOrder struct {
	mu   sync.Mutex
	last chan struct{} // closed when the newest turn is done
}

// NewRunOrder returns an order whose first turn need not wait.
func NewRunOrder() *RunOrder {
	first := make(chan struct{})
	close(first)
	return &RunOrder{last: first}
}

// Next returns the turn of the next run in chain order.
func (o *RunOrder) Next() *RunTurn {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := &RunTurn{prev: o.last, self: make(chan struct{})}
	o.last = t.self
	return t
}

// RunTurn is one run's place in a RunOrder. A nil *RunTurn never waits.
type RunTurn struct {
	prev <-chan struct{}
	self chan struct{}
	once sync.Once
}

// Wait returns once the run before this one is done, or with ctx's error.
func (t *RunTurn) Wait(ctx context.Context) error {
	if t == nil {
		return nil
	}
	select {
	case <-t.prev:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Done ends this run's turn: the next run may go on. It may be called more
// than once.
func (t *RunTurn) Done() {
	if t == nil {
		return
	}
	t.once.Do(func() { close(t.self) })
}
