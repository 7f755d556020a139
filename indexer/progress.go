package indexer

import (
	"time"

	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/bitcoind"
)

// progress writes a catch-up line every interval: height of node height,
// blocks/s and filter bytes/s over the interval, the time left at that
// rate, and, for a source that counts them, the share of spent scripts
// its cache resolved without asking the node.
type progress struct {
	log      zerolog.Logger
	every    time.Duration
	end      uint32
	since    time.Time
	blocks   int
	bytes    int
	elements int
	// prevouts, when set, reports the source's PrevoutCounts totals;
	// cache0 and node0 are their values at the interval's start.
	prevouts      func() (fromCache, fromNode uint64)
	cache0, node0 uint64
}

func newProgress(log zerolog.Logger, every time.Duration, start, end uint32, source BlockSource) *progress {
	log.Info().Uint32("from", start).Uint32("to", end).Msg("catching up")
	p := &progress{log: log, every: every, end: end, since: time.Now()}
	if c, ok := source.(bitcoind.PrevoutCounter); ok {
		p.prevouts = c.PrevoutCounts
		p.cache0, p.node0 = c.PrevoutCounts()
	}
	return p
}

// add records a committed batch and logs when an interval has passed.
func (p *progress) add(blocks, filterBytes, elements int, height uint32) {
	p.blocks += blocks
	p.bytes += filterBytes
	p.elements += elements
	elapsed := time.Since(p.since)
	if elapsed < p.every && height != p.end {
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
		ev = ev.Dur("eta", time.Duration(float64(p.end-height)/rate*float64(time.Second)).Round(time.Second))
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

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }
