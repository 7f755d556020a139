package peerpolicy

import (
	"runtime"
	"testing"
	"time"
)

func TestUploadTargetWindow(t *testing.T) {
	u := NewUploadTarget(1000)
	now := time.Unix(1_700_000_000, 0)
	u.Add(1, 600, now)
	u.Add(2, 300, now.Add(time.Hour))
	if u.Reached(now.Add(2 * time.Hour)) {
		t.Fatal("900 of 1000 reached")
	}
	u.Add(1, 100, now.Add(3*time.Hour))
	if !u.Reached(now.Add(3 * time.Hour)) {
		t.Fatal("1000 of 1000 not reached")
	}
	// The first 600 leave the window a day later; the rest stays.
	if got := u.Served(now.Add(24*time.Hour + time.Minute)); got != 400 {
		t.Fatalf("served %d in the window a day later, want 400", got)
	}
	if u.Reached(now.Add(24*time.Hour + time.Minute)) {
		t.Fatal("target still reached after the window slid")
	}
	if got := u.Served(now.Add(30 * 24 * time.Hour)); got != 0 {
		t.Fatalf("served %d a month later", got)
	}
	if NewUploadTarget(0).Reached(now) {
		t.Fatal("target 0 (unlimited) reached")
	}
}

// Historical blocks are refused to everyone once the whole target was
// served in the window, and to one network group once it was served its
// share (1/UploadGroupShare of the target), whatever the others did.
func TestUploadTargetHistoricalRefusal(t *testing.T) {
	const limit = 800 // a share of 100
	now := time.Unix(1_700_000_000, 0)
	type served struct {
		group uint64
		n     int
		ago   time.Duration
	}
	tests := []struct {
		name   string
		limit  int64
		served []served
		ask    uint64
		want   UploadRefusal
	}{
		{"nothing served", limit, nil, 1, NotRefused},
		{"group under its share", limit, []served{{1, 99, 0}}, 1, NotRefused},
		{"group at its share", limit, []served{{1, 60, time.Hour}, {1, 40, 0}}, 1, RefusedGroupShare},
		{"another group over its share", limit, []served{{1, 500, 0}}, 2, NotRefused},
		{"a flood from one group leaves the others theirs", limit, []served{{1, 700, 0}, {2, 99, 0}}, 2, NotRefused},
		{"the whole target served", limit, []served{{1, 100, 0}, {2, 100, 0}, {3, 100, 0}, {4, 100, 0}, {5, 100, 0}, {6, 100, 0}, {7, 100, 0}, {8, 100, 0}}, 9, RefusedTarget},
		{"target before share", limit, []served{{1, 800, 0}}, 1, RefusedTarget},
		{"the share slid out of the window", limit, []served{{1, 100, 25 * time.Hour}}, 1, NotRefused},
		{"part of the share slid out", limit, []served{{1, 50, 25 * time.Hour}, {1, 99, 23 * time.Hour}}, 1, NotRefused},
		{"a tiny target serves a group its first block", 1, nil, 1, NotRefused},
		{"a tiny target after one block", 1, []served{{1, 1000, 0}}, 2, RefusedTarget},
		{"unlimited", 0, []served{{1, 1 << 40, 0}}, 1, NotRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := NewUploadTarget(tt.limit)
			for _, s := range tt.served {
				u.Add(s.group, s.n, now.Add(-s.ago))
			}
			if got := u.HistoricalRefusal(tt.ask, now); got != tt.want {
				t.Fatalf("refusal %q, want %q", got, tt.want)
			}
		})
	}
}

// The groups tracked stay within MaxUploadGroups and their bytes within
// UploadGroupBytes each; the groups forgotten are those served least, so
// a group over its share stays refused however many small groups come.
func TestUploadTargetGroupsBounded(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	u := NewUploadTarget(8 << 20)
	u.Add(0, 1<<20, now) // group 0 at its share
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for g := uint64(1); g <= 4*MaxUploadGroups; g++ {
		u.Add(g, int(g%1000)+1, now.Add(time.Duration(g)*time.Second))
	}
	runtime.ReadMemStats(&after)
	if n := len(u.groups); n > MaxUploadGroups || n < MaxUploadGroups-uploadGroupsDropped {
		t.Fatalf("%d groups tracked, want %d at most and %d at least", n, MaxUploadGroups, MaxUploadGroups-uploadGroupsDropped)
	}
	// Allocated in all (garbage included) bounds what is held.
	t.Logf("%d bytes allocated", after.TotalAlloc-before.TotalAlloc)
	if got, bound := after.TotalAlloc-before.TotalAlloc, uint64(MaxUploadGroups*UploadGroupBytes); got > bound {
		t.Fatalf("tracking %d groups allocated %d bytes, bound %d", MaxUploadGroups, got, bound)
	}
	last := now.Add(4 * MaxUploadGroups * time.Second)
	if got := u.HistoricalRefusal(0, last); got != RefusedGroupShare {
		t.Fatalf("the big spender got %q after the flood of small groups, want %q", got, RefusedGroupShare)
	}
	if got := u.HistoricalRefusal(4*MaxUploadGroups, last); got != NotRefused {
		t.Fatalf("a small group got %q", got)
	}
}

// Counting bytes for a group already tracked, against a new group once
// MaxUploadGroups are tracked (the group served least is looked for among
// all): the second is what a peer from a fresh /16 costs per block served.
func BenchmarkUploadTargetAdd(b *testing.B) {
	now := time.Unix(1_700_000_000, 0)
	full := func() *UploadTarget {
		u := NewUploadTarget(1 << 40)
		for g := range uint64(MaxUploadGroups) {
			u.Add(g, int(g)+1000, now)
		}
		return u
	}
	b.Run("known", func(b *testing.B) {
		u := full()
		for i := 0; b.Loop(); i++ {
			u.Add(uint64(i%MaxUploadGroups), 1000, now)
		}
	})
	b.Run("new", func(b *testing.B) {
		u := full()
		for i := 0; b.Loop(); i++ {
			u.Add(uint64(MaxUploadGroups+i), 1, now)
		}
	})
}
