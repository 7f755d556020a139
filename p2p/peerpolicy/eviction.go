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

// DiscouragedMinIdle is how long a peer must have been idle (connected,
// or its last request answered, that long ago) before a newcomer from a
// discouraged address may take its slot on a server without free slots.
const DiscouragedMinIdle = 2 * time.Minute

// EvictionCandidate describes one inbound peer for SelectPeerToEvict. It
// is plain data so that eviction is a pure function, tested without
// sockets as Core tests SelectNodeToEvict.
type EvictionCandidate struct {
	ID        uint64
	Connected time.Time
	// MinPing is the lowest ping round trip seen; zero if none yet (it
	// then sorts as the slowest).
	MinPing time.Duration
	// LastUseful is when a filter or header request of the peer was last
	// answered; zero if never.
	LastUseful time.Time
	// Addr and NetGroup are keyed hashes of the peer's AddrGroup (IPv4
	// address, IPv6 /64) and NetGroup (IPv4 /16, IPv6 /32): equal for
	// peers of one group, unpredictable across groups.
	Addr     uint64
	NetGroup uint64
	// PreferEvict marks a peer whose address was discouraged when it
	// connected: evicted before any other unprotected peer.
	PreferEvict bool
	// NoBan marks a whitelisted peer: never evicted.
	NoBan bool

	exposed bool // beyond a group's level (Eviction.MaxPerAddr, MaxPerNetGroup)
}

// idleSince is when the peer last had a request answered, or connected.
func (c EvictionCandidate) idleSince() time.Time {
	if c.LastUseful.After(c.Connected) {
		return c.LastUseful
	}
	return c.Connected
}

// Eviction is what a peer is evicted for: the newcomer's groups and the
// server's levels.
type Eviction struct {
	// NewAddr and NewNetGroup are the newcomer's groups, keyed as the
	// candidates': it counts in them, so its own crowded group is the one
	// that gives up a peer.
	NewAddr, NewNetGroup uint64
	// MaxPerAddr and MaxPerNetGroup are the levels above which a group's
	// peers go first: the peers an address or netgroup holds beyond
	// MaxPerAddr or MaxPerNetGroup, its idle ones (splitAtLevels), get no
	// protection and are evicted before any other peer but a discouraged
	// one. Zero: no level.
	MaxPerAddr, MaxPerNetGroup int
	// MinIdle, when positive, limits the choice to peers idle (idleSince)
	// for at least MinIdle at Now: what a discouraged newcomer may
	// displace.
	MinIdle time.Duration
	// Grace, when positive, is how long after connecting a peer never
	// served is spared (NewcomerGrace): it goes only after every other
	// peer not protected, so that the next newcomer does not take the
	// slot of one still in its handshake or waiting for its first answer.
	Grace time.Duration
	Now   time.Time
}

// NewcomerGrace is the server's Eviction.Grace: time for a newcomer to
// finish its handshake and have its first request answered, from when
// on the protection of the recently useful can shield it.
const NewcomerGrace = 2 * time.Second

// inGrace reports whether c is spared as a newcomer under e.
func (e Eviction) inGrace(c EvictionCandidate) bool {
	return e.Grace > 0 && c.LastUseful.IsZero() && e.Now.Sub(c.Connected) < e.Grace
}

// SelectPeerToEvict picks the peer to disconnect so that a newcomer can
// take its slot, or ok=false when every candidate is protected (or, with
// MinIdle, none unprotected is idle long enough).
//
// As Core: whitelisted peers are never chosen; one peer from each of
// evictProtectNetGroups netgroups (by keyed netgroup hash), the
// evictProtectPing peers with the lowest ping, the evictProtectUseful peers
// most recently useful, and the half of the rest connected longest are
// protected; of the others, discouraged peers go first; the victim comes
// from the netgroup holding the most connections, so no group crowds out
// the others.
//
// Differences from Core: peers beyond a group's level (Eviction) are not
// protected and go right after discouraged ones; the newcomer counts in
// its groups, and a group's size counts all its peers, protected ones
// included; within the netgroup chosen, the address holding the most
// connections gives up its peer idle longest (Core takes the netgroup's
// youngest), so a newcomer sharing an address or a netgroup with an
// attacker is not the next one out while its first requests are answered;
// the peers shielded by netgroup come from distinct netgroups; a ping
// never answered protects nobody; and each fixed protection shields at
// most an eighth of the candidates, so that a small server can still make
// room. A discouraged newcomer (MinIdle; Core admits none when full) may
// take only an unprotected peer idle for MinIdle, and age protects no
// idle peer from it. Newcomers in their grace (Eviction.Grace: connected
// moments ago, never served) go after every other peer not protected, and
// then the one connected longest first: Core takes the youngest peer of
// the netgroup holding the most, so a newcomer whose netgroup holds an
// attacker's protected peers is the next one out, often before its
// handshake ends; levels and discouragement still come first.
func SelectPeerToEvict(candidates []EvictionCandidate, e Eviction) (id uint64, ok bool) {
	cands := slices.DeleteFunc(slices.Clone(candidates), func(c EvictionCandidate) bool { return c.NoBan })
	perAddr := map[uint64]int{e.NewAddr: 1}
	perNet := map[uint64]int{e.NewNetGroup: 1}
	for _, c := range cands {
		perAddr[c.Addr]++
		perNet[c.NetGroup]++
	}
	kept, exposed := splitAtLevels(cands, e.MaxPerAddr, e.MaxPerNetGroup)

	// Each fixed protection shields at most an eighth of the candidates,
	// so that a small server (Core's numbers assume 125 slots) still has
	// peers to evict.
	scale := func(k int) int { return min(k, len(cands)/8) }
	kept = protectNetGroups(kept, scale(evictProtectNetGroups))
	eraseLastK(&kept, func(a, b EvictionCandidate) int { // slowest first
		return cmp.Compare(pingOrMax(b.MinPing), pingOrMax(a.MinPing))
	}, scale(evictProtectPing), func(c EvictionCandidate) bool { return c.MinPing > 0 })
	eraseLastK(&kept, func(a, b EvictionCandidate) int { // least recently useful first
		return a.LastUseful.Compare(b.LastUseful)
	}, scale(evictProtectUseful), func(c EvictionCandidate) bool { return !c.LastUseful.IsZero() })
	if e.MinIdle <= 0 {
		// The half connected longest is protected, except from a
		// discouraged newcomer (MinIdle): a peer idle for minutes is what
		// it may displace, and the longest connected idle peers are
		// exactly those, so shielding them by age would leave it none.
		eraseLastK(&kept, func(a, b EvictionCandidate) int { // newest first
			return b.Connected.Compare(a.Connected)
		}, len(kept)/2)
	}

	rest := append(exposed, kept...)
	if e.MinIdle > 0 {
		rest = slices.DeleteFunc(rest, func(c EvictionCandidate) bool { return e.Now.Sub(c.idleSince()) < e.MinIdle })
	}
	switch {
	case len(rest) == 0:
		return 0, false
	case slices.ContainsFunc(rest, func(c EvictionCandidate) bool { return c.PreferEvict }):
		rest = slices.DeleteFunc(rest, func(c EvictionCandidate) bool { return !c.PreferEvict })
	case slices.ContainsFunc(rest, func(c EvictionCandidate) bool { return c.exposed }):
		rest = slices.DeleteFunc(rest, func(c EvictionCandidate) bool { return !c.exposed })
	case slices.ContainsFunc(rest, func(c EvictionCandidate) bool { return !e.inGrace(c) }):
		rest = slices.DeleteFunc(rest, e.inGrace)
	default:
		// Only newcomers in their grace: the one connected longest,
		// which had the most time to be served, whatever its group.
		return slices.MinFunc(rest, func(a, b EvictionCandidate) int {
			if c := a.Connected.Compare(b.Connected); c != 0 {
				return c
			}
			return cmp.Compare(a.ID, b.ID)
		}).ID, true
	}
	// The netgroup holding the most, then its address holding the most,
	// then the peer idle longest; then the youngest, the highest id.
	return slices.MinFunc(rest, func(a, b EvictionCandidate) int {
		if c := cmp.Compare(perNet[b.NetGroup], perNet[a.NetGroup]); c != 0 {
			return c
		}
		if c := cmp.Compare(perAddr[b.Addr], perAddr[a.Addr]); c != 0 {
			return c
		}
		if c := a.idleSince().Compare(b.idleSince()); c != 0 {
			return c
		}
		if c := b.Connected.Compare(a.Connected); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	}).ID, true
}

// splitAtLevels returns the candidates within their groups' levels and,
// marked exposed, those beyond (a level of zero: none). Of each address
// its maxAddr peers served most recently are within, then (if fewer were
// ever served) those connected most recently; then likewise maxNet of
// each netgroup's peers within their address's level. So the peers
// beyond are the group's idle ones, never served and connected longest
// first: a newcomer has the time to be served before it is exposed.
func splitAtLevels(cands []EvictionCandidate, maxAddr, maxNet int) (kept, exposed []EvictionCandidate) {
	slices.SortFunc(cands, func(a, b EvictionCandidate) int {
		if c := b.LastUseful.Compare(a.LastUseful); c != 0 {
			return c
		}
		if c := b.Connected.Compare(a.Connected); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	seenAddr, seenNet := make(map[uint64]int), make(map[uint64]int)
	for _, c := range cands {
		if seenAddr[c.Addr]++; maxAddr > 0 && seenAddr[c.Addr] > maxAddr {
			c.exposed = true
			exposed = append(exposed, c)
			continue
		}
		if seenNet[c.NetGroup]++; maxNet > 0 && seenNet[c.NetGroup] > maxNet {
			c.exposed = true
			exposed = append(exposed, c)
			continue
		}
		kept = append(kept, c)
	}
	return kept, exposed
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
