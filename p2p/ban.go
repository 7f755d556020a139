package p2p

import (
	"net/netip"
	"sync"
	"time"
)

// banList holds address groups (addrGroup: an IPv4 address, an IPv6 /64)
// refused until a deadline. Safe for concurrent use.
type banList struct {
	mu    sync.Mutex
	until map[netip.Prefix]time.Time
}

// maxBans bounds the list; expired entries are pruned when it is reached.
const maxBans = 10_000

func newBanList() *banList {
	return &banList{until: make(map[netip.Prefix]time.Time)}
}

// Ban refuses ip's address group for d from now.
func (b *banList) Ban(ip netip.Addr, d time.Duration, now time.Time) {
	g := addrGroup(ip)
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
		b.until[g] = now.Add(d)
	}
}

// Banned reports whether ip's address group is refused at now.
func (b *banList) Banned(ip netip.Addr, now time.Time) bool {
	g := addrGroup(ip)
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.until[g]
	if ok && !now.Before(t) {
		delete(b.until, g)
		return false
	}
	return ok
}
