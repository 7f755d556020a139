package rest

import "sync"

// bulkSlots bounds the bulk downloads in flight: at most total at once and
// at most perAddr from one client address.
type bulkSlots struct {
	total, perAddr int
	inFlight       func(n int) // told the number in use after each change

	mu     sync.Mutex
	inUse  int
	byAddr map[clientKey]int
}

func newBulkSlots(total, perAddr int, inFlight func(n int)) *bulkSlots {
	return &bulkSlots{total: total, perAddr: perAddr, inFlight: inFlight, byAddr: make(map[clientKey]int)}
}

// acquire takes a slot for key. It returns the function that gives it back,
// or a nil function and the cap that refused it ("total" or
// "per_address").
func (b *bulkSlots) acquire(key clientKey) (release func(), refused string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.byAddr[key] >= b.perAddr:
		return nil, "per_address"
	case b.inUse >= b.total:
		return nil, "total"
	}
	b.inUse++
	b.byAddr[key]++
	b.inFlight(b.inUse)
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.inUse--
			if b.byAddr[key]--; b.byAddr[key] <= 0 {
				delete(b.byAddr, key)
			}
			b.inFlight(b.inUse)
		})
	}, ""
}
