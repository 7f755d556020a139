package peerpolicy

import (
	"math/rand/v2"
	"testing"
	"time"
)

// cand describes a candidate compactly: netgroup, connected at second
// `at` (larger: newer), ping in ms (0: none), last useful at second (0:
// never).
func cand(id, group uint64, at int, pingMs int, useful int) EvictionCandidate {
	base := time.Unix(1_700_000_000, 0)
	c := EvictionCandidate{
		ID:        id,
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

func TestSelectPeerToEvict(t *testing.T) {
	tests := []struct {
		name  string
		cands []EvictionCandidate
		want  uint64 // 0: none
	}{
		{"no candidates", nil, 0},
		{"only whitelisted", func() []EvictionCandidate {
			cs := many(1, 30, 7, 0)
			for i := range cs {
				cs[i].NoBan = true
			}
			return cs
		}(), 0},
		{"one peer: evicted for the newcomer", many(1, 1, 7, 0), 1},
		{"two peers: the newer", many(1, 2, 7, 0), 2},
		{
			// 40 peers from netgroup 1 and one each from 8 others: the
			// newest of the crowded netgroup goes, never a lone one.
			"largest netgroup, newest member",
			cat(many(1, 40, 1, 0),
				[]EvictionCandidate{cand(101, 11, 500, 0, 0), cand(102, 12, 501, 0, 0), cand(103, 13, 502, 0, 0),
					cand(104, 14, 503, 0, 0), cand(105, 15, 504, 0, 0), cand(106, 16, 505, 0, 0),
					cand(107, 17, 506, 0, 0), cand(108, 18, 507, 0, 0)}),
			40,
		},
		{
			// The newest peer of the crowded netgroup has the lowest ping:
			// protected, so the next newest goes.
			"low ping protects",
			func() []EvictionCandidate {
				cs := many(1, 40, 1, 0)
				cs[39].MinPing = time.Millisecond
				for i := 0; i < 39; i++ {
					cs[i].MinPing = time.Second + time.Duration(i)*time.Millisecond
				}
				return cs
			}(),
			39,
		},
		{
			"recently useful protects",
			func() []EvictionCandidate {
				cs := many(1, 40, 1, 0)
				cs[39].LastUseful = time.Unix(1_700_001_000, 0)
				return cs
			}(),
			39,
		},
		{
			// A discouraged peer goes before anyone else not protected,
			// even from a small netgroup.
			"discouraged first",
			func() []EvictionCandidate {
				cs := cat(many(1, 40, 1, 0), []EvictionCandidate{cand(50, 9, 100, 0, 0), cand(51, 9, 101, 0, 0)})
				cs[41].PreferEvict = true
				return cs
			}(),
			51,
		},
		{
			// Two netgroups of equal size: the one whose newest member
			// connected last.
			"tie: netgroup with the newest member",
			cat(many(1, 20, 1, 0), many(21, 20, 2, 1000)),
			40,
		},
		{
			// Long-connected peers are protected: an old crowded netgroup
			// loses to a younger one, which has the half not protected.
			"uptime protects the older half",
			cat(many(1, 24, 1, 0), many(25, 16, 2, 1000)),
			40,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := SelectPeerToEvict(tc.cands)
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

// Whatever the candidates, as long as one is not whitelisted there is
// someone to evict (a newcomer always gets in), and it is never from a
// netgroup with fewer unprotected peers than another; whitelisted peers
// are never chosen.
func TestSelectPeerToEvictAlwaysMakesRoom(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for round := range 2000 {
		n := 1 + rng.IntN(130)
		cands := make([]EvictionCandidate, n)
		allNoBan := true
		for i := range cands {
			cands[i] = cand(uint64(i+1), uint64(rng.IntN(1+rng.IntN(20))), rng.IntN(10_000), rng.IntN(3)*rng.IntN(500), rng.IntN(2)*rng.IntN(10_000))
			cands[i].PreferEvict = rng.IntN(10) == 0
			cands[i].NoBan = rng.IntN(10) == 0
			allNoBan = allNoBan && cands[i].NoBan
		}
		id, ok := SelectPeerToEvict(cands)
		if ok == allNoBan {
			t.Fatalf("round %d: %d candidates (all whitelisted %v): ok %v", round, n, allNoBan, ok)
		}
		if ok && cands[id-1].NoBan {
			t.Fatalf("round %d: evicted whitelisted peer %d", round, id)
		}
	}
}
