package peerpolicy

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// Upload target window and shares, as Bitcoin Core's -maxuploadtarget:
// bytes served in the last 24 hours, counted in hourly buckets so that the
// window slides rather than resets once a day.
const (
	uploadWindow  = 24 * time.Hour
	uploadBuckets = 24
	// HistoricalBlockAge is Core's HISTORICAL_BLOCK_AGE: blocks this much
	// older than the tip are "historical" and refused once the target is
	// reached; newer blocks are always served.
	HistoricalBlockAge = 7 * 24 * time.Hour
	// UploadGroupShare is the part of the target one network group
	// (NetGroup) may be served before its historical blocks are refused:
	// 1/UploadGroupShare. A fixed fraction rather than the limit divided
	// among the groups seen: a share that shrinks as groups appear lets an
	// attacker with many groups shrink everybody's, while a fixed one makes
	// it need UploadGroupShare distinct /16s (or IPv6 /32s) to use up the
	// whole target, which eviction's netgroup diversity already makes
	// costly. Core has no shares: one /16 can spend the whole target.
	UploadGroupShare = 8
	// MaxUploadGroups bounds the network groups whose bytes are tracked;
	// past it, the groups served least in the window are forgotten, an
	// eighth at a time. That only ever gives back a share to the smallest
	// spenders, never to a group over its share while smaller ones are
	// tracked (and at most UploadGroupShare groups can be over it).
	MaxUploadGroups     = 1024
	uploadGroupsDropped = MaxUploadGroups / 8
	// UploadGroupBytes is the heap one tracked group takes (its window,
	// its map entry, its place in the sort buffer), for the server's
	// memory bound.
	UploadGroupBytes = 384
)

// UploadRefusal says why a historical block is refused; NotRefused when
// it is served.
type UploadRefusal string

// The reasons a historical block is refused.
const (
	NotRefused UploadRefusal = ""
	// RefusedTarget: the window has served the whole target.
	RefusedTarget UploadRefusal = "target"
	// RefusedGroupShare: the requester's network group has been served
	// its share of the target (UploadGroupShare).
	RefusedGroupShare UploadRefusal = "group_share"
)

// UploadRefusals lists every UploadRefusal but NotRefused (metric labels).
func UploadRefusals() []UploadRefusal { return []UploadRefusal{RefusedTarget, RefusedGroupShare} }

// UploadTarget counts block bytes served over a sliding 24-hour window
// against a limit (0 = unlimited), in all and per network group (the keyed
// NetGroup the server passes). Safe for concurrent use.
type UploadTarget struct {
	limit int64

	mu     sync.Mutex
	total  dayWindow
	groups map[uint64]*dayWindow // at most MaxUploadGroups; nil when unlimited
	// free holds windows of forgotten groups for reuse; scratch is the
	// sort buffer of newGroupLocked.
	free    []*dayWindow
	scratch []groupServed
}

// groupServed is one group's bytes in the window, for sorting.
type groupServed struct {
	group  uint64
	served int64
}

// dayWindow is one sliding window: hourly buckets and their sum.
type dayWindow struct {
	buckets [uploadBuckets]int64
	// hour is the index (unix time / bucket length) of the newest bucket.
	hour int64
	sum  int64
}

// NewUploadTarget returns a target of limit bytes a day; 0 = unlimited.
func NewUploadTarget(limit int64) *UploadTarget {
	u := &UploadTarget{limit: limit}
	if limit > 0 {
		u.groups = make(map[uint64]*dayWindow)
	}
	return u
}

// hourOf is the bucket index of t.
func hourOf(t time.Time) int64 { return t.UnixNano() / int64(uploadWindow/uploadBuckets) }

// advance moves the window to hour h, clearing buckets that fell out of it.
func (w *dayWindow) advance(h int64) {
	if h <= w.hour {
		return
	}
	if h-w.hour >= uploadBuckets {
		w.buckets, w.sum = [uploadBuckets]int64{}, 0
	} else {
		for i := w.hour + 1; i <= h; i++ {
			w.sum -= w.buckets[i%uploadBuckets]
			w.buckets[i%uploadBuckets] = 0
		}
	}
	w.hour = h
}

// add counts n bytes in hour h.
func (w *dayWindow) add(h, n int64) {
	w.advance(h)
	w.buckets[w.hour%uploadBuckets] += n
	w.sum += n
}

// served is the window's bytes as of hour h.
func (w *dayWindow) served(h int64) int64 {
	w.advance(h)
	return w.sum
}

// Add counts n bytes served at now to a peer of group.
func (u *UploadTarget) Add(group uint64, n int, now time.Time) {
	h := hourOf(now)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.total.add(h, int64(n))
	if u.groups == nil {
		return
	}
	w, ok := u.groups[group]
	if !ok {
		w = u.newGroupLocked(h)
		u.groups[group] = w
	}
	w.add(h, int64(n))
}

// newGroupLocked returns a fresh window for a new group. With
// MaxUploadGroups tracked, the uploadGroupsDropped groups served least are
// forgotten at once (their windows kept for reuse), so that finding them,
// a sort of every group, is paid once per that many new groups.
func (u *UploadTarget) newGroupLocked(h int64) *dayWindow {
	if len(u.free) == 0 && len(u.groups) >= MaxUploadGroups {
		if u.scratch == nil {
			u.scratch = make([]groupServed, 0, MaxUploadGroups)
		}
		u.scratch = u.scratch[:0]
		for g, w := range u.groups {
			u.scratch = append(u.scratch, groupServed{g, w.served(h)})
		}
		slices.SortFunc(u.scratch, func(a, b groupServed) int { return cmp.Compare(a.served, b.served) })
		for _, e := range u.scratch[:uploadGroupsDropped] {
			u.free = append(u.free, u.groups[e.group])
			delete(u.groups, e.group)
		}
	}
	if n := len(u.free); n > 0 {
		w := u.free[n-1]
		u.free = u.free[:n-1]
		*w = dayWindow{}
		return w
	}
	return new(dayWindow)
}

// Served returns the bytes served in the 24 hours up to now.
func (u *UploadTarget) Served(now time.Time) int64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.total.served(hourOf(now))
}

// Reached reports whether the target is set and the window has served it.
func (u *UploadTarget) Reached(now time.Time) bool {
	return u.limit > 0 && u.Served(now) >= u.limit
}

// groupShare is the bytes one group may be served before its historical
// blocks are refused (rounded up, so that a tiny target still serves a
// group its first block).
func (u *UploadTarget) groupShare() int64 {
	return (u.limit + UploadGroupShare - 1) / UploadGroupShare
}

// HistoricalRefusal says whether a historical block (HistoricalBlockAge)
// is refused to a peer of group at now, and why: the whole target was
// served in the window (Core's rule), or the group was served its share.
// Recent blocks are not the caller's to ask about: they are always served.
func (u *UploadTarget) HistoricalRefusal(group uint64, now time.Time) UploadRefusal {
	if u.limit <= 0 {
		return NotRefused
	}
	h := hourOf(now)
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.total.served(h) >= u.limit {
		return RefusedTarget
	}
	if w, ok := u.groups[group]; ok && w.served(h) >= u.groupShare() {
		return RefusedGroupShare
	}
	return NotRefused
}
