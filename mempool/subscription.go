package mempool

import "sync"

// Subscription receives the transactions the mirror adds.
type Subscription struct {
	m  *Mirror
	ch chan *Tx

	mu      sync.Mutex
	closed  bool
	dropped uint64
}

// Subscribe returns a subscription buffering up to buffer transactions
// (at least 1). A subscriber that falls behind loses transactions rather
// than slowing the mirror: Dropped counts them.
func (m *Mirror) Subscribe(buffer int) *Subscription {
	s := &Subscription{m: m, ch: make(chan *Tx, max(buffer, 1))}
	m.mu.Lock()
	m.subs[s] = struct{}{}
	m.mu.Unlock()
	return s
}

// C delivers new transactions; it is closed by Close.
func (s *Subscription) C() <-chan *Tx { return s.ch }

// Dropped is how many transactions the subscriber missed by being slow.
func (s *Subscription) Dropped() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Close ends the subscription and closes C.
func (s *Subscription) Close() {
	s.m.mu.Lock()
	delete(s.m.subs, s)
	s.m.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.ch)
	}
}

func (s *Subscription) deliver(tx *Tx) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	select {
	case s.ch <- tx:
	default:
		s.dropped++
	}
}
