package main

import (
	"runtime/debug"

	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/httpapi"
	"github.com/cfindexd/cfindexd/internal/hostres"
	"github.com/cfindexd/cfindexd/netparams"
	"github.com/cfindexd/cfindexd/p2p"
)

// Go's garbage collector lets the heap grow to twice what was live after
// the last collection (GOGC=100) before it collects again. cfindexd keeps
// the heap near what is live instead, in two parts:
//
//   - GOGC is 20 (memoryGCPercent): a collection starts once the heap has
//     grown by a fifth over what the last one left live. A catch-up's
//     live heap is mostly the script cache (scriptcache MiB, kept for the
//     whole catch-up) plus the blocks in flight, about 110 MB with the
//     defaults, so the heap stays within a fifth of that: peak RSS 146 MB
//     on the mainnet-shaped benchmark chain with both listeners on (224
//     MB with GOGC=100, 159 MB with 25). The collector's work per byte
//     allocated is five times GOGC=100's, on a live heap that is small:
//     1-2 % of the catch-up's CPU.
//   - A soft memory limit (runtime/debug.SetMemoryLimit) derived from every
//     budget the configuration sets: the indexer's (the script cache, the
//     fetch pipeline's runs per worker), the P2P server's worst case
//     (p2p.MemoryBound), the HTTP server's (httpapi.MemoryBound), the BIP-37
//     mempool mirror's, and a base for the runtime and the store. Near it
//     the collector works harder rather than let the heap grow; far below
//     it (always, unless every peer and client is at every limit at once)
//     it does nothing. A limit below what serving can hold live would
//     make the collector run without pause under load; this one is above
//     it by construction. It is soft: past it the collector's share of
//     the CPU is capped at half, rather than the process failing.
//
// GOGC and GOMEMLIMIT in the environment override each part; the
// memorylimit key overrides the derived limit. Under a cgroup hard limit
// (systemd's MemoryMax=) below four thirds of the derived limit, the soft
// limit is three quarters of the hard one instead, with a warning: the
// collector then fights for memory before the kernel kills the process.
const (
	memoryGCPercent = 20
	// memoryPerWorker is what the fetch pipeline holds per worker: a run
	// of about 2 MB of blocks read in place, with its scripts and filters.
	memoryPerWorker = 4 << 20
	// memoryBase is the rest: the runtime, the store's batches and read
	// buffers, the node clients' reply buffers, the node probe's decoded
	// block (with wire's 4 MiB script slab) and logs.
	memoryBase = 32 << 20
	// mempoolSlab is the wire script slab the mempool mirror's decodes
	// keep (p2p.MemoryBound counts the P2P server's).
	mempoolSlab = 4 << 20
)

// memoryBudget is the heap each part of the daemon may hold at most, in
// bytes, as its configuration bounds it; the soft memory limit is their sum.
type memoryBudget struct {
	// Indexer is the script cache plus memoryPerWorker per worker.
	Indexer int64
	// P2P is p2p.MemoryBound of the P2P server's configuration (0 with
	// listen off).
	P2P int64
	// HTTP is httpapi.MemoryBound of the HTTP server's (0 with httplisten
	// off).
	HTTP int64
	// Mempool is the BIP-37 mempool mirror's budget (mempoolmirror) and
	// its decoder's slab, 0 without a mirror.
	Mempool int64
	// Base is memoryBase.
	Base int64
}

// total is the sum of the budgets.
func (b memoryBudget) total() int64 { return b.Indexer + b.P2P + b.HTTP + b.Mempool + b.Base }

// memoryBudgetOf computes the budgets of cfg on nw, from the same
// configurations the daemon gives its servers.
func memoryBudgetOf(cfg Config, nw netparams.Network) memoryBudget {
	b := memoryBudget{
		Indexer: int64(cfg.ScriptCache)<<20 + int64(cfg.Workers)*memoryPerWorker,
		Base:    memoryBase,
	}
	if cfg.Listen != "" {
		// The daemon always gives the P2P server the node link for blocks
		// and relay; only its presence counts for the bound.
		pc, err := p2pConfig(cfg, nw, nil, nil, (*nodeLink)(nil), zerolog.Nop())
		if err == nil {
			pc.Bloom = bloomP2PConfig(cfg, nil, nil)
			b.P2P = p2p.MemoryBound(pc)
		}
	}
	if cfg.HTTPListen != "" {
		b.HTTP = httpapi.MemoryBound(httpLimits(cfg, httpapi.Config{}))
	}
	if mirrorsMempool(cfg) {
		b.Mempool = int64(cfg.MempoolMirror)<<20 + mempoolSlab
	}
	return b
}

// memoryLimitBytes is the soft memory limit for cfg: the memorylimit key
// in MiB, or, when it is 0, the sum of the budgets.
func memoryLimitBytes(cfg Config, b memoryBudget) int64 {
	if cfg.MemoryLimit > 0 {
		return int64(cfg.MemoryLimit) << 20
	}
	return b.total()
}

// applyMemoryLimit sets the Go runtime's GC percentage and soft memory
// limit for cfg, unless the GOGC or GOMEMLIMIT environment variables set
// them (the runtime has applied those already; "off" turns either off),
// and logs the budgets the limit is made of.
func applyMemoryLimit(cfg Config, b memoryBudget, getenv func(string) string, cgroupMax int64, log zerolog.Logger) {
	ev := log.Info().Int64("indexer_mib", b.Indexer>>20).Int64("p2p_mib", b.P2P>>20).Int64("http_mib", b.HTTP>>20).
		Int64("mempool_mib", b.Mempool>>20).Int64("base_mib", b.Base>>20)
	if v := getenv("GOGC"); v != "" {
		ev = ev.Str("gogc", v+" (GOGC)")
	} else {
		debug.SetGCPercent(memoryGCPercent)
		ev = ev.Int("gogc", memoryGCPercent)
	}
	switch v := getenv("GOMEMLIMIT"); {
	case v != "":
		ev = ev.Str("memory_limit", v+" (GOMEMLIMIT; memorylimit ignored)")
	case cfg.MemoryLimit > 0:
		limit := memoryLimitBytes(cfg, b)
		debug.SetMemoryLimit(limit)
		ev = ev.Int64("memory_limit_mib", limit>>20).Str("memory_limit_from", "memorylimit")
	default:
		limit, capped := hostres.CapToCgroup(memoryLimitBytes(cfg, b), cgroupMax)
		debug.SetMemoryLimit(limit)
		ev = ev.Int64("memory_limit_mib", limit>>20).Str("memory_limit_from", "budgets")
		if capped {
			log.Warn().Int64("budgets_mib", b.total()>>20).Int64("memory_max_mib", cgroupMax>>20).Int64("memory_limit_mib", limit>>20).
				Msg("the memory budgets exceed three quarters of the cgroup's memory.max (systemd MemoryMax=): raise MemoryMax= or lower maxpeers, httpmaxconns or the budgets; the soft limit is three quarters of it instead")
			ev = ev.Str("memory_limit_from", "memory.max")
		}
	}
	ev.Msg("memory budgets")
}
