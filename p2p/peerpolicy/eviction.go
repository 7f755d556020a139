package peerpolicy

import (
	"cmp"
	"slices"
	"time"
)

// Eviction protections, after Bitcoin Core's SelectNodeToEvict
// (src/node/eviction.cpp): how many candidates each criterion shields.
const (
	// evictProtectNetGroups: one peer from each of this many netgroups,
	// chosen by a keyed hash of the netgroup an attacker cannot predict.
	evictProtectNetGroups = 4
	// evictProtectPing: the peers with the lowest ping round trip, which
	// an attacker cannot improve without moving closer.
	evictProtectPing = 8
	// evictProtectUseful: the peers whose filter or header requests were
	// answered most recently (Core protects peers that recently relayed
	// novel transactions and blocks; what a filter server's honest peers do
	// is ask for filters and headers).
	evictProtectUseful = 8
)

// EvictionCandidate describes one inbound peer for SelectPeerToEvict. It
// is plain data so that eviction is a pure function, tested without
// sockets as Core tests SelectNodeToEvict.
type EvictionCandidate struct {
	ID        uint64
	Connected time.Time
	// minPing is the lowest ping round trip seen; zero if none yet (it
	// then sorts as the slowest).
	MinPing time.Duration
	// lastUseful is when a filter or header request of the peer was last
	// answered; zero if never.
	LastUseful time.Time
	// netGroup is the keyed hash of the peer's netgroup (IPv4 /16, IPv6
	// /32): equal for peers of one netgroup, unpredictable across groups.
	NetGroup uint64
	// preferEvict marks a peer whose address was discouraged when it
	// connected: evicted before any other unprotected peer.
	PreferEvict bool
	// noBan marks a whitelisted peer: never evicted.
	NoBan bool
}

// SelectPeerToEvict picks the peer to disconnect so that a new inbound
// peer can take its slot, or ok=false when every candidate is protected.
//
// As Core: whitelisted peers are never chosen; then one peer from each of
// evictProtectNetGroups netgroups (by keyed netgroup hash), the
// evictProtectPing peers with the lowest ping, the evictProtectUseful peers
// most recently useful, and the half of the rest connected longest are
// protected. Of the remainder, discouraged peers go first if
// there are any; then the peer connected most recently in the netgroup
// with the most remaining peers is chosen (ties: the netgroup whose newest
// peer connected last). Differences from Core: the 4 peers shielded by
// netgroup come from 4 distinct netgroups (Core takes the 4 with the
// highest keyed netgroup, which may share one), which is the diversity the
// rule is for; a ping never answered protects nobody; and each fixed
// protection shields at most an eighth of the candidates, so that a server
// with few slots can still make room (with Core's fixed counts, fewer than
// about 30 peers are all protected and a newcomer is refused).
func SelectPeerToEvict(candidates []EvictionCandidate) (id uint64, ok bool) {
	cands := slices.DeleteFunc(slices.Clone(candidates), func(c EvictionCandidate) bool { return c.NoBan })

	// Each fixed protection shields at most an eighth of the candidates,
	// so that a small server (Core's numbers assume 125 slots) still has
	// peers to evict.
	scale := func(k int) int { return min(k, len(cands)/8) }
	cands = protectNetGroups(cands, scale(evictProtectNetGroups))
	eraseLastK(&cands, func(a, b EvictionCandidate) int { // slowest first
		return cmp.Compare(pingOrMax(b.MinPing), pingOrMax(a.MinPing))
	}, scale(evictProtectPing), func(c EvictionCandidate) bool { return c.MinPing > 0 })
	eraseLastK(&cands, func(a, b EvictionCandidate) int { // least recently useful first
		return a.LastUseful.Compare(b.LastUseful)
	}, scale(evictProtectUseful), func(c EvictionCandidate) bool { return !c.LastUseful.IsZero() })
	eraseLastK(&cands, func(a, b EvictionCandidate) int { // newest first
		return b.Connected.Compare(a.Connected)
	}, len(cands)/2)
	if len(cands) == 0 {
		return 0, false
	}

	if slices.ContainsFunc(cands, func(c EvictionCandidate) bool { return c.PreferEvict }) {
		cands = slices.DeleteFunc(cands, func(c EvictionCandidate) bool { return !c.PreferEvict })
	}

	// cands is sorted newest first: each group's first member is its newest.
	type group struct {
		n      int
		newest EvictionCandidate
	}
	groups := make(map[uint64]*group)
	var best *group
	for _, c := range cands {
		g := groups[c.NetGroup]
		if g == nil {
			g = &group{newest: c}
			groups[c.NetGroup] = g
		}
		g.n++
		if best == nil || g.n > best.n || g.n == best.n && g.newest.Connected.After(best.newest.Connected) {
			best = g
		}
	}
	return best.newest.ID, true
}

// protectNetGroups removes from cands the longest-connected peer of each
// of the n netgroups with the highest keyed hash.
func protectNetGroups(cands []EvictionCandidate, n int) []EvictionCandidate {
	var keys []uint64
	for _, c := range cands {
		if !slices.Contains(keys, c.NetGroup) {
			keys = append(keys, c.NetGroup)
		}
	}
	slices.Sort(keys)
	if len(keys) > n {
		keys = keys[len(keys)-n:]
	}
	for _, k := range keys {
		oldest := -1
		for i, c := range cands {
			if c.NetGroup == k && (oldest < 0 || c.Connected.Before(cands[oldest].Connected) ||
				c.Connected.Equal(cands[oldest].Connected) && c.ID < cands[oldest].ID) {
				oldest = i
			}
		}
		cands = slices.Delete(cands, oldest, oldest+1)
	}
	return cands
}

// eraseLastK sorts cands by order and removes, among its last k elements,
// those that keep reports true (all when keep is omitted), as Core's
// EraseLastKElements. Ties go newest first, so that of equals the longer
// connected are protected, and then by id, for determinism.
func eraseLastK(cands *[]EvictionCandidate, order func(a, b EvictionCandidate) int, k int, keep ...func(EvictionCandidate) bool) {
	s := *cands
	slices.SortStableFunc(s, func(a, b EvictionCandidate) int {
		if c := order(a, b); c != 0 {
			return c
		}
		if c := b.Connected.Compare(a.Connected); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	k = min(k, len(s))
	tail := slices.DeleteFunc(s[len(s)-k:], func(c EvictionCandidate) bool {
		return len(keep) == 0 || keep[0](c)
	})
	*cands = append(s[:len(s)-k], tail...)
}

// pingOrMax treats an unmeasured ping as the slowest.
func pingOrMax(d time.Duration) time.Duration {
	if d <= 0 {
		return time.Duration(1<<63 - 1)
	}
	return d
}
