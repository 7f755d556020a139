package metrics

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cfindexd/cfindexd/p2p/bip37"
)

// bloomMetrics are the metrics of BIP-37 serving (bip37.Metrics) and of
// the mempool mirror it announces from. They are registered at start, at
// 0, whether or not serving is on.
type bloomMetrics struct {
	peers        prometheus.Gauge
	refused      *prometheus.CounterVec
	blocks       prometheus.Counter
	matchedTxs   prometheus.Counter
	announced    prometheus.Counter
	workSeconds  prometheus.Counter
	mempoolStats atomic.Pointer[func() (txs int, bytes int64)]
}

func newBloomMetrics(reg *prometheus.Registry) *bloomMetrics {
	m := &bloomMetrics{
		peers: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: "bip37_peers",
			Help: "P2P peers with a BIP-37 Bloom filter loaded."}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "bip37_filters_refused_total",
			Help: "filterload or filteradd messages refused by policy (the peer disconnected without penalty), by reason (too_noisy: bloommaxfpr, too_precise: bloomminfpr, update_rate)."}, []string{"reason"}),
		blocks: prometheus.NewCounter(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "bip37_filtered_blocks_total",
			Help: "Filtered blocks (merkleblock) served."}),
		matchedTxs: prometheus.NewCounter(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "bip37_matched_txs_total",
			Help: "Transactions sent after merkleblocks (matched by the peers' filters)."}),
		announced: prometheus.NewCounter(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "bip37_mempool_txs_announced_total",
			Help: "Mempool transactions announced (inv) to BIP-37 peers, as they arrived or in answer to mempool."}),
		workSeconds: prometheus.NewCounter(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "bip37_work_seconds_total",
			Help: "CPU time spent on BIP-37 work (decoding blocks, hashing txids, matching filters), held to bloomcpu."}),
	}
	for _, reason := range bip37.RefusalReasons() {
		m.refused.WithLabelValues(reason)
	}
	reg.MustRegister(m.peers, m.refused, m.blocks, m.matchedTxs, m.announced, m.workSeconds)
	stat := func(name, help string, v func(txs int, bytes int64) float64) {
		reg.MustRegister(newOptionalGauge(prometheus.BuildFQName(metricsNamespace, "", name), help, func() (float64, bool) {
			f := m.mempoolStats.Load()
			if f == nil {
				return 0, false
			}
			return v((*f)()), true
		}))
	}
	stat("mempool_mirror_transactions", "Transactions held by the mirror of the node's mempool (BIP-37 serving).",
		func(txs int, _ int64) float64 { return float64(txs) })
	stat("mempool_mirror_bytes", "Accounted memory of the mirror of the node's mempool (bounded by mempoolmirror).",
		func(_ int, bytes int64) float64 { return float64(bytes) })
	return m
}

// WatchMempool exports the mempool mirror's size, read at each scrape.
func (m *Metrics) WatchMempool(stats func() (txs int, bytes int64)) {
	m.bloom.mempoolStats.Store(&stats)
}

// BloomPeers sets the peers with a filter loaded (bip37.Metrics).
func (m *Metrics) BloomPeers(n int) { m.bloom.peers.Set(float64(n)) }

// BloomFilterRefused counts a refused filter by reason (bip37.Metrics).
func (m *Metrics) BloomFilterRefused(reason string) { m.bloom.refused.WithLabelValues(reason).Inc() }

// FilteredBlockServed counts a merkleblock and its transactions
// (bip37.Metrics).
func (m *Metrics) FilteredBlockServed(matchedTxs int) {
	m.bloom.blocks.Inc()
	m.bloom.matchedTxs.Add(float64(matchedTxs))
}

// MempoolTxsAnnounced counts announced transactions (bip37.Metrics).
func (m *Metrics) MempoolTxsAnnounced(n int) { m.bloom.announced.Add(float64(n)) }

// BloomWork counts BIP-37 CPU time (bip37.Metrics).
func (m *Metrics) BloomWork(d time.Duration) { m.bloom.workSeconds.Add(d.Seconds()) }
