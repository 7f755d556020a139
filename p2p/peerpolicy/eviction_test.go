package peerpolicy

import (
	"math/rand/v2"
	"testing"
	"time"
)

// cand describes a candidate compactly: an address of its own (its id),
// netgroup, connected at second `at` (larger: newer), ping in ms (0:
// none), last useful at second (0: never).
func cand(id, group uint64, at int, pingMs int, useful int) EvictionCandidate {
	base := time.Unix(1_700_000_000, 0)
	c := EvictionCandidate{
		ID:        id,
		Addr:      id,
		NetGroup:  group,
		Connected: base.Add(time.Duration(at) * time.Second),
		MinPing:   time.Duration(pingMs) * time.Millisecond,
	}
	if useful > 0 {
		c.LastUseful = base.Add(time.Duration(useful) * time.Second)
	}
	return c
}

// many returns n candidates of group with ids from first, connected at
// seconds from at on, one a second.
func many(first uint64, n int, group uint64, at int) []EvictionCandidate {
	out := make([]EvictionCandidate, n)
	for i := range out {
		out[i] = cand(first+uint64(i), group, at+i, 0, 0)
	}
	return out
}

func cat(parts ...[]EvictionCandidate) []EvictionCandidate {
	var out []EvictionCandidate
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// forGroup is an Eviction for a newcomer of netgroup 99 and address 999
// (a group of its own), with no levels.
var forGroup = Eviction{NewAddr: 999, NewNetGroup: 99}

func TestSelectPeerToEvict(t *testing.T) {
	// In one netgroup of 40 peers connected at seconds 0..39 (ids 1..40)
	// and never useful, id 1 is shielded by netgroup, ids 2..20 by
	// uptime: id 21 is the one idle longest of the rest.
	one := func(edit func(cs []EvictionCandidate)) []EvictionCandidate {
		cs := many(1, 40, 1, 0)
		if edit != nil {
			edit(cs)
		}
		return cs
	}
	tests := []struct {
		name  string
		cands []EvictionCandidate
		ev    Eviction
		want  uint64 // 0: none
	}{
		{"no candidates", nil, forGroup, 0},
		{"only whitelisted", one(func(cs []EvictionCandidate) {
			for i := range cs {
				cs[i].NoBan = true
			}
		}), forGroup, 0},
		{"one peer: evicted for the newcomer", many(1, 1, 7, 0), forGroup, 1},
		{"two peers: the newer (the older is shielded by uptime)", many(1, 2, 7, 0), forGroup, 2},
		{
			// Not the newest (Core's choice): a newcomer in a crowded
			// group is not the next one out.
			"crowded netgroup gives up the peer idle longest",
			cat(one(nil), []EvictionCandidate{cand(101, 11, 500, 0, 0), cand(102, 12, 501, 0, 0),
				cand(103, 13, 502, 0, 0), cand(104, 14, 503, 0, 0)}),
			forGroup, 21,
		},
		{"a measured low ping shields", one(func(cs []EvictionCandidate) { cs[20].MinPing = time.Millisecond }), forGroup, 22},
		{"recently useful shields", one(func(cs []EvictionCandidate) { cs[20].LastUseful = time.Unix(1_700_001_000, 0) }), forGroup, 22},
		{
			// A discouraged peer goes before anyone else not protected,
			// even from a small netgroup.
			"discouraged first",
			func() []EvictionCandidate {
				cs := cat(one(nil), []EvictionCandidate{cand(50, 9, 100, 0, 0), cand(51, 9, 101, 0, 0)})
				cs[41].PreferEvict = true
				return cs
			}(),
			forGroup, 51,
		},
		{
			// Core counts the unprotected only and would take group 2,
			// whose younger peers uptime does not shield.
			"the netgroup holding the most, protected peers counted",
			cat(many(1, 24, 1, 0), many(25, 16, 2, 1000)),
			forGroup, 21,
		},
		{"equal netgroups: the newcomer's own gives up a peer",
			cat(many(1, 20, 1, 0), many(21, 20, 2, 0)), Eviction{NewAddr: 999, NewNetGroup: 2}, 32},
		{"equal netgroups: the other one when the newcomer is in the first",
			cat(many(1, 20, 1, 0), many(21, 20, 2, 0)), Eviction{NewAddr: 999, NewNetGroup: 1}, 11},
		{
			// Ten peers share address 777 in netgroup 1: that address
			// gives up its peer idle longest.
			"within the netgroup, the address holding the most",
			one(func(cs []EvictionCandidate) {
				for i := 30; i < 40; i++ {
					cs[i].Addr = 777
				}
			}),
			forGroup, 31,
		},
		{
			// Address 5 holds ids 1..10, each with a low ping and useful
			// of late: beyond the level of 4, the six served least
			// recently (ids 1..6) are not shielded and go first, the one
			// idle longest first.
			"beyond the per-address level: no protection, first out",
			cat(func() []EvictionCandidate {
				cs := many(1, 10, 1, 0)
				for i := range cs {
					cs[i].Addr, cs[i].MinPing = 5, time.Millisecond
					cs[i].LastUseful = time.Unix(1_700_001_000+int64(i), 0)
				}
				return cs
			}(), func() []EvictionCandidate {
				var cs []EvictionCandidate
				for i := range 30 {
					cs = append(cs, cand(uint64(11+i), uint64(100+i), 100+i, 0, 0))
				}
				return cs
			}()),
			Eviction{NewAddr: 999, NewNetGroup: 99, MaxPerAddr: 4}, 1,
		},
		{
			// All 40 useful of late, in order: beyond the level of 32, the
			// eight served least recently (ids 1..8, shielded by uptime
			// without the level) go first.
			"beyond the per-netgroup level: first out",
			one(func(cs []EvictionCandidate) {
				for i := range cs {
					cs[i].LastUseful = time.Unix(1_700_002_000+int64(i), 0)
				}
			}),
			Eviction{NewAddr: 999, NewNetGroup: 99, MaxPerNetGroup: 32}, 1,
		},
		{
			// Address 5 holds ids 1..12, never served; id 12 connected
			// last. Beyond the level of 8, the four connected longest
			// (ids 1..4) are exposed, not the newcomer: id 1 goes.
			"beyond the level: the idle ones, not the newest",
			cat(func() []EvictionCandidate {
				cs := many(1, 12, 1, 0)
				for i := range cs {
					cs[i].Addr = 5
				}
				return cs
			}(), many(13, 28, 2, 100)),
			Eviction{NewAddr: 5, NewNetGroup: 1, MaxPerAddr: 8}, 1,
		},
		{
			// Everybody useful of late but id 30: only it has been idle
			// five minutes, and it is not protected.
			"a discouraged newcomer displaces only a peer idle for minutes",
			one(func(cs []EvictionCandidate) {
				for i := range cs {
					if i != 29 {
						cs[i].LastUseful = time.Unix(1_700_001_000+int64(i), 0)
					}
				}
			}),
			Eviction{NewAddr: 999, NewNetGroup: 99, MinIdle: 5 * time.Minute, Now: time.Unix(1_700_001_100, 0)}, 30,
		},
		{
			// Ids 21..40 useful of late; ids 2..20, shielded by uptime
			// from any other newcomer, have been idle since they
			// connected: age shields no idle peer from a discouraged
			// newcomer, and id 2 is idle longest (id 1: its netgroup).
			"a discouraged newcomer displaces the idle long-connected",
			one(func(cs []EvictionCandidate) {
				for i := 20; i < len(cs); i++ {
					cs[i].LastUseful = time.Unix(1_700_001_000+int64(i), 0)
				}
			}),
			Eviction{NewAddr: 999, NewNetGroup: 99, MinIdle: 2 * time.Minute, Now: time.Unix(1_700_001_100, 0)}, 2,
		},
		{
			"a discouraged newcomer finds no peer idle for minutes",
			one(func(cs []EvictionCandidate) {
				for i := range cs {
					cs[i].LastUseful = time.Unix(1_700_001_000+int64(i), 0)
				}
			}),
			Eviction{NewAddr: 999, NewNetGroup: 99, MinIdle: 5 * time.Minute, Now: time.Unix(1_700_001_100, 0)}, 0,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := SelectPeerToEvict(tc.cands, tc.ev)
			if tc.want == 0 {
				if ok {
					t.Fatalf("evicted %d, want none", got)
				}
				return
			}
			if !ok || got != tc.want {
				t.Fatalf("evicted %d (ok %v), want %d", got, ok, tc.want)
			}
		})
	}
}

// Whatever the candidates and levels, as long as one is not whitelisted
// there is someone to evict (a newcomer always gets in); whitelisted peers
// are never chosen.
func TestSelectPeerToEvictAlwaysMakesRoom(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for round := range 2000 {
		n := 1 + rng.IntN(130)
		cands := make([]EvictionCandidate, n)
		allNoBan := true
		for i := range cands {
			cands[i] = cand(uint64(i+1), uint64(rng.IntN(1+rng.IntN(20))), rng.IntN(10_000), rng.IntN(3)*rng.IntN(500), rng.IntN(2)*rng.IntN(10_000))
			cands[i].Addr = uint64(rng.IntN(1 + rng.IntN(200)))
			cands[i].PreferEvict = rng.IntN(10) == 0
			cands[i].NoBan = rng.IntN(10) == 0
			allNoBan = allNoBan && cands[i].NoBan
		}
		id, ok := SelectPeerToEvict(cands, Eviction{NewAddr: uint64(rng.IntN(200)), NewNetGroup: uint64(rng.IntN(20)),
			MaxPerAddr: rng.IntN(3), MaxPerNetGroup: rng.IntN(10)})
		if ok == allNoBan {
			t.Fatalf("round %d: %d candidates (all whitelisted %v): ok %v", round, n, allNoBan, ok)
		}
		if ok && cands[id-1].NoBan {
			t.Fatalf("round %d: evicted whitelisted peer %d", round, id)
		}
	}
}

// eviction-churn as the server saw it: 122 idle peers from 122 /16s
// (ids 1..122, group = id, connected long ago, pings measured), newcomers
// of the churn from /16s 2..6 (ids 202..206, connected 5..1 s ago) and one
// from /16 1 (id 201, 10 s ago) with the lowest ping of all, and the good
// client of /16 1 (id 300) connecting now, in its handshake. The next
// newcomer, of /16 7, arrives.
func churnCandidates() []EvictionCandidate {
	var cs []EvictionCandidate
	for i := range 122 {
		cs = append(cs, cand(uint64(i+1), uint64(i+1), i, 10+i%50, 0))
	}
	cs = append(cs, cand(201, 1, 990, 1, 0))
	for i := range 5 {
		cs = append(cs, cand(uint64(202+i), uint64(2+i), 995+i, 0, 0))
	}
	return append(cs, cand(300, 1, 1000, 0, 0))
}

// A newcomer in its grace (connected moments ago, never served) is not
// the next newcomer's victim: its /16 holds the most (an idle peer, a
// churn peer and it) but the others of the /16 are protected (age, ping),
// so without a grace it is the one taken, during its handshake, as in
// eviction-churn's refusal. Levels and discouragement still come first,
// and when only newcomers in their grace are left, the one connected
// longest goes.
func TestSelectPeerToEvictSparesNewcomerInGrace(t *testing.T) {
	now := time.Unix(1_700_000_000+1000, 0)
	next := Eviction{NewAddr: 999, NewNetGroup: 7, Now: now}
	withGrace := next
	withGrace.Grace = NewcomerGrace
	tests := []struct {
		name  string
		cands []EvictionCandidate
		ev    Eviction
		want  uint64
	}{
		{"no grace: the good client in its handshake goes", churnCandidates(), next, 300},
		// Of the churn peers past their grace (202..204; 205 and 206 are
		// 2 s and 1 s old), those of the /16s holding two, idle longest.
		{"grace: a churn peer past its grace goes", churnCandidates(), withGrace, 202},
		{"grace ends at the first answer", func() []EvictionCandidate {
			cs := churnCandidates()
			for i := range cs {
				if cs[i].ID >= 202 && cs[i].ID <= 206 {
					cs[i].NoBan = true // only the good client is left to the /16 rule
				}
			}
			cs[len(cs)-1].LastUseful = now.Add(-time.Second) // served once, not among the 8 useful: none else is
			for i := range 8 {
				cs[i+10].LastUseful = now // eight served later
			}
			return cs
		}(), withGrace, 300},
		// Ids 1 and 2 are shielded by uptime; of 3 and 4, the /16 rule
		// would take 4 (its /16 holds the most, with the newcomer).
		{"only newcomers in grace: the one connected longest", func() []EvictionCandidate {
			var cs []EvictionCandidate
			for i, ago := range []time.Duration{1900, 1500, 1000, 500} {
				c := cand(uint64(i+1), uint64(1+i%2), 0, 0, 0)
				c.Connected = now.Add(-ago * time.Millisecond)
				cs = append(cs, c)
			}
			return cs
		}(), Eviction{NewAddr: 999, NewNetGroup: 2, Grace: NewcomerGrace, Now: now}, 3},
		{"a discouraged newcomer in grace still goes first", func() []EvictionCandidate {
			cs := churnCandidates()
			cs[len(cs)-1].PreferEvict = true
			return cs
		}(), withGrace, 300},
		{"a newcomer in grace beyond its address's level still goes first", func() []EvictionCandidate {
			cs := churnCandidates()
			cs[len(cs)-1].Addr = 55
			cs[54].Addr = 55 // idle peer 55 shares its address
			return cs
		}(), Eviction{NewAddr: 999, NewNetGroup: 7, MaxPerAddr: 1, Grace: NewcomerGrace, Now: now}, 55},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := SelectPeerToEvict(tc.cands, tc.ev)
			if !ok || got != tc.want {
				t.Fatalf("evicted %d (ok %v), want %d", got, ok, tc.want)
			}
		})
	}
}
