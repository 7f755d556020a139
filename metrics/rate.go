package metrics

import "time"

// rateWindowLength is the span over which index_rate_blocks_per_second
// counts committed blocks. It is measured at scrape time, so the rate
// falls to 0 once nothing has been committed for that long; commits come
// at least every second during a catch-up (indexer.Config.CommitEvery), so
// ten one-second slots keep the value steady.
const rateWindowLength = 10 * time.Second

// rateWindow counts committed blocks in one-second slots over the last
// rateWindowLength. Not safe for concurrent use.
type rateWindow struct {
	slots [int(rateWindowLength / time.Second)]struct {
		second int64 // Unix second the slot counts; stale slots are ignored
		blocks int
	}
	first time.Time // first commit; zero before it
}

// add records blocks committed at now.
func (w *rateWindow) add(now time.Time, blocks int) {
	if w.first.IsZero() {
		w.first = now
	}
	sec := now.Unix()
	s := &w.slots[sec%int64(len(w.slots))]
	if s.second != sec {
		s.second, s.blocks = sec, 0
	}
	s.blocks += blocks
}

// perSecond returns the blocks committed in the window ending at now, per
// second of the window (or of the time since the first commit, when that
// is shorter, so a fresh start does not read low).
func (w *rateWindow) perSecond(now time.Time) float64 {
	if w.first.IsZero() {
		return 0
	}
	sec := now.Unix()
	total := 0
	for _, s := range w.slots {
		if s.second > sec-int64(len(w.slots)) && s.second <= sec {
			total += s.blocks
		}
	}
	span := min(rateWindowLength, max(now.Sub(w.first), time.Second))
	return float64(total) / span.Seconds()
}
