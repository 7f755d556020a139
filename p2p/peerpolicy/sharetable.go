package peerpolicy

import (
	"container/list"
	"sync"
)

// ShareTable holds the shares of a FairQueue by key (a peer's id, a
// network group), for a queue whose users do not keep a share of their
// own: a key's share lives while it is in use and is then kept, among the
// maxIdle most recently used idle ones, so that a peer asking now and then
// keeps the credit of its low service between its requests. A key whose
// idle share was dropped starts again at the queue's floor (NewShare).
// Safe for concurrent use.
type ShareTable struct {
	q       *FairQueue
	maxIdle int

	mu    sync.Mutex
	byKey map[uint64]*tableShare
	idle  *list.List // idle shares, front most recently used; values are keys
}

// tableShare is one key's share and its users.
type tableShare struct {
	share *Share
	users int
	elem  *list.Element // in idle while users == 0
}

// NewShareTable returns a table of shares of q keeping at most maxIdle idle
// shares.
func NewShareTable(q *FairQueue, maxIdle int) *ShareTable {
	return &ShareTable{q: q, maxIdle: max(0, maxIdle), byKey: make(map[uint64]*tableShare), idle: list.New()}
}

// Get returns key's share, in use until put is called (once).
func (t *ShareTable) Get(key uint64) (s *Share, put func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.byKey[key]
	if !ok {
		e = &tableShare{share: t.q.NewShare()}
		t.byKey[key] = e
	}
	if e.elem != nil {
		t.idle.Remove(e.elem)
		e.elem = nil
	}
	e.users++
	return e.share, func() { t.put(key, e) }
}

// put ends one use of key's share.
func (t *ShareTable) put(key uint64, e *tableShare) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.users--; e.users > 0 {
		return
	}
	e.elem = t.idle.PushFront(key)
	for t.idle.Len() > t.maxIdle {
		delete(t.byKey, t.idle.Remove(t.idle.Back()).(uint64))
	}
}

// Len returns the shares held, in use or idle.
func (t *ShareTable) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byKey)
}
