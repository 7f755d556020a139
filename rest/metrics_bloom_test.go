package rest

import (
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/p2p"
)

// The BIP-37 metrics are exported at 0 before anything happens, move with
// each p2p.BloomMetrics call, and the mempool mirror's size appears once
// a mirror is watched.
func TestBloomMetrics(t *testing.T) {
	m := NewMetrics()
	s, err := New(Config{}, recordedView(t), m, zerologNop())
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	type sample struct {
		name   string
		labels []string
		want   float64
	}
	samples := []sample{
		{"cfindexd_bip37_peers", nil, 3},
		{"cfindexd_bip37_filtered_blocks_total", nil, 1},
		{"cfindexd_bip37_matched_txs_total", nil, 4},
		{"cfindexd_bip37_mempool_txs_announced_total", nil, 5},
		{"cfindexd_bip37_work_seconds_total", nil, 1.5},
	}
	for _, r := range p2p.BloomRefusalReasons() {
		samples = append(samples, sample{"cfindexd_bip37_filters_refused_total", []string{"reason", r}, 1})
	}
	before := scrape(t, h)
	for _, s := range samples {
		if got := metricValue(before, s.name, s.labels...); got != 0 {
			t.Errorf("%s%v = %v at start, want 0", s.name, s.labels, got)
		}
	}
	if _, ok := before["cfindexd_mempool_mirror_transactions"]; ok {
		t.Error("mempool mirror size exported without a mirror")
	}
	m.BloomPeers(3)
	m.FilteredBlockServed(4)
	m.MempoolTxsAnnounced(5)
	m.BloomWork(1500 * time.Millisecond)
	for _, r := range p2p.BloomRefusalReasons() {
		m.BloomFilterRefused(r)
	}
	m.WatchMempool(func() (int, int64) { return 7, 4096 })
	after := scrape(t, h)
	for _, s := range samples {
		if got := metricValue(after, s.name, s.labels...); got != s.want {
			t.Errorf("%s%v = %v, want %v", s.name, s.labels, got, s.want)
		}
	}
	if got := metricValue(after, "cfindexd_mempool_mirror_transactions"); got != 7 {
		t.Errorf("mempool_mirror_transactions = %v", got)
	}
	if got := metricValue(after, "cfindexd_mempool_mirror_bytes"); got != 4096 {
		t.Errorf("mempool_mirror_bytes = %v", got)
	}
}
