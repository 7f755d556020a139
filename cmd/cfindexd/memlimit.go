package main

import (
	"runtime/debug"

	"github.com/rs/zerolog"
)

// Go's garbage collector lets the heap grow to twice what was live after
// the last collection (GOGC=100) before it collects again. cfindexd's live
// heap is mostly the txindex mode's script cache (scriptcache MiB, kept for
// the whole catch-up) plus the blocks in flight, so without a limit the
// heap — and the RSS — settles near twice the cache: 261 MB measured on a
// 6,211-block chain with the default 64 MiB cache. A soft memory limit
// (runtime/debug.SetMemoryLimit) makes the collector run as the heap
// nears it instead, so the process stays near its budgets.
//
// The limit is derived from them: the script cache, what the fetch
// pipeline holds per worker (a run of about 2 MB of blocks, read in place,
// with its scripts and filters), and a base for the runtime, the store's
// batches, peers and the HTTP server. It is soft: when more is live (many
// peers, a huge block), the heap grows past it and the collector's share
// of the CPU is capped at half, rather than the process failing.
const (
	memoryPerWorker = 4 << 20
	memoryBase      = 24 << 20
)

// memoryLimitBytes is the soft memory limit for cfg: the memorylimit key
// in MiB, or, when it is 0, derived from the budgets.
func memoryLimitBytes(cfg Config) int64 {
	if cfg.MemoryLimit > 0 {
		return int64(cfg.MemoryLimit) << 20
	}
	return int64(cfg.ScriptCache)<<20 + int64(cfg.Workers)*memoryPerWorker + memoryBase
}

// applyMemoryLimit sets the Go runtime's soft memory limit for cfg, unless
// the GOMEMLIMIT environment variable sets one (the runtime has applied
// it already; "off" turns the limit off).
func applyMemoryLimit(cfg Config, getenv func(string) string, log zerolog.Logger) {
	if v := getenv("GOMEMLIMIT"); v != "" {
		log.Info().Str("gomemlimit", v).Msg("memory limit from GOMEMLIMIT; memorylimit ignored")
		return
	}
	limit := memoryLimitBytes(cfg)
	debug.SetMemoryLimit(limit)
	log.Debug().Int64("memory_limit_mib", limit>>20).Msg("Go soft memory limit")
}
