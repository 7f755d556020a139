package indexer

import (
	"time"

	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/prevouts"
)

// progress writes a catch-up line every interval: height of node height,
// blocks/s and filter bytes/s over the interval, the time left at that
// rate, and, for a source that counts them, the share of spent scripts
// its cache resolved without asking the node. When the range is done it
// writes one "caught up" line with the totals of the whole catch-up
// instead.
type progress struct {
	log      zerolog.Logger
	every    time.Duration
	end      uint32
	since    time.Time
	blocks   int
	bytes    int
	elements int
	// began, total and the prevout counts at the start cover the whole
	// catch-up, for the "caught up" line.
	began                 time.Time
	total                 int
	cacheBegan, nodeBegan uint64
	// prevouts, when set, reports the source's PrevoutCounts totals;
	// cache0 and node0 are their values at the interval's start.
	prevouts      func() (fromCache, fromNode uint64)
	cache0, node0 uint64
}

func newProgress(log zerolog.Logger, every time.Duration, start, end uint32, source BlockSource) *progress {
	log.Info().Uint32("from", start).Uint32("to", end).Msg("catching up")
	now := time.Now()
	p := &progress{log: log, every: every, end: end, since: now, began: now}
	if c, ok := source.(prevouts.PrevoutCounter); ok {
		p.prevouts = c.PrevoutCounts
		p.cache0, p.node0 = c.PrevoutCounts()
		p.cacheBegan, p.nodeBegan = p.cache0, p.node0
	}
	return p
}

// add records a committed batch and logs when an interval has passed.
func (p *progress) add(blocks, filterBytes, elements int, height uint32) {
	p.blocks += blocks
	p.bytes += filterBytes
	p.elements += elements
	p.total += blocks
	if height == p.end {
		p.caughtUp(height)
		return
	}
	elapsed := time.Since(p.since)
	if elapsed < p.every {
		return
	}
	secs := elapsed.Seconds()
	rate := float64(p.blocks) / secs
	ev := p.log.Info().
		Uint32("height", height).
		Uint32("node_height", p.end).
		Float64("blocks_per_s", round1(rate)).
		Float64("filter_bytes_per_s", round1(float64(p.bytes)/secs)).
		Float64("elements_per_s", round1(float64(p.elements)/secs))
	if height < p.end && rate > 0 {
		ev = ev.Stringer("eta", time.Duration(float64(p.end-height)/rate*float64(time.Second)).Round(time.Second))
	}
	if p.prevouts != nil {
		fromCache, fromNode := p.prevouts()
		if c, n := fromCache-p.cache0, fromNode-p.node0; c+n > 0 {
			ev = ev.Float64("prevout_cache_pct", round1(100*float64(c)/float64(c+n)))
		}
		p.cache0, p.node0 = fromCache, fromNode
	}
	ev.Msg("catching up")
	p.since, p.blocks, p.bytes, p.elements = time.Now(), 0, 0, 0
}

// caughtUp writes the one line that ends a catch-up: the totals.
func (p *progress) caughtUp(height uint32) {
	elapsed := time.Since(p.began)
	ev := p.log.Info().Uint32("height", height).Int("blocks", p.total).
		Stringer("elapsed", elapsed.Round(time.Millisecond))
	if secs := elapsed.Seconds(); secs > 0 {
		ev = ev.Float64("blocks_per_s", round1(float64(p.total)/secs))
	}
	if p.prevouts != nil {
		fromCache, fromNode := p.prevouts()
		if c, n := fromCache-p.cacheBegan, fromNode-p.nodeBegan; c+n > 0 {
			ev = ev.Float64("prevout_cache_pct", round1(100*float64(c)/float64(c+n)))
		}
	}
	ev.Msg("caught up")
}

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }
