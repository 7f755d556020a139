package p2p

import (
	"net/netip"
	"sync"
	"time"
)

// banList holds IPs refused until a deadline. Safe for concurrent use.
type banList struct {
	mu    sync.Mutex
	until map[netip.Addr]time.Time
}

// maxBans bounds the list; expired entries are pruned when it is reached.
const maxBans = 10_000

func newBanList() *banList {
	return &banList{until: make(map[netip.Addr]time.Time)}
}

// Ban refuses ip for d from now.
func (b *banList) Ban(ip netip.Addr, d time.Duration, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.until) >= maxBans {
		for k, t := range b.until {
			if !now.Before(t) {
				delete(b.until, k)
			}
		}
	}
	if len(b.until) < maxBans {
		b.until[ip] = now.Add(d)
	}
}

// Banned reports whether ip is refused at now.
func (b *banList) Banned(ip netip.Addr, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.until[ip]
	if ok && !now.Before(t) {
		delete(b.until, ip)
		return false
	}
	return ok
}
