package metrics

import (
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/p2p/bip37"
)

// The BIP-37 metrics are exported at 0 before anything happens, move with
// each bip37.Metrics call, and the mempool mirror's size appears once
// a mirror is watched.
func TestBloomMetrics(t *testing.T) {
	m, h := newMetricsHandler(t)
	samples := []metricSample{
		{"cfindexd_bip37_peers", nil, 3},
		{"cfindexd_bip37_filtered_blocks_total", nil, 1},
		{"cfindexd_bip37_matched_txs_total", nil, 4},
		{"cfindexd_bip37_mempool_txs_announced_total", nil, 5},
		{"cfindexd_bip37_work_seconds_total", nil, 1.5},
	}
	for _, r := range bip37.RefusalReasons() {
		samples = append(samples, metricSample{"cfindexd_bip37_filters_refused_total", []string{"reason", r}, 1})
	}
	before := scrape(t, h)
	wantZeroAtStart(t, before, samples)
	if _, ok := before["cfindexd_mempool_mirror_transactions"]; ok {
		t.Error("mempool mirror size exported without a mirror")
	}
	m.BloomPeers(3)
	m.FilteredBlockServed(4)
	m.MempoolTxsAnnounced(5)
	m.BloomWork(1500 * time.Millisecond)
	for _, r := range bip37.RefusalReasons() {
		m.BloomFilterRefused(r)
	}
	m.WatchMempool(func() (int, int64) { return 7, 4096 })
	after := scrape(t, h)
	wantSamples(t, after, samples)
	if got := metricValue(after, "cfindexd_mempool_mirror_transactions"); got != 7 {
		t.Errorf("mempool_mirror_transactions = %v", got)
	}
	if got := metricValue(after, "cfindexd_mempool_mirror_bytes"); got != 4096 {
		t.Errorf("mempool_mirror_bytes = %v", got)
	}
}
