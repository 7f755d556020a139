package metrics

import (
	"testing"

	"github.com/cfindexd/cfindexd/p2p"
)

// The P2P defence counters are exported at 0 before anything happens and
// move with each p2p.Metrics call.
func TestP2PDefenceMetrics(t *testing.T) {
	m, h := newMetricsHandler(t)
	// One event of each kind: every counter at 1.
	samples := []metricSample{
		{"cfindexd_p2p_evictions_total", nil, 1},
		{"cfindexd_p2p_discouraged_total", nil, 1},
		{"cfindexd_p2p_send_stalls_total", nil, 1},
		{"cfindexd_p2p_panics_total", nil, 1},
		{"cfindexd_p2p_large_frames_dropped_total", nil, 1},
	}
	for _, r := range p2p.RefusalReasons() {
		samples = append(samples, metricSample{"cfindexd_p2p_refused_total", []string{"reason", r}, 1})
	}
	for _, r := range p2p.UploadRefusalReasons() {
		samples = append(samples, metricSample{"cfindexd_p2p_upload_target_refusals_total", []string{"reason", r}, 1})
	}
	before := scrape(t, h)
	wantZeroAtStart(t, before, samples)

	m.PeerEvicted()
	m.PeerDiscouraged()
	m.SendStalled()
	for _, r := range p2p.UploadRefusalReasons() {
		m.UploadTargetRefused(r)
	}
	m.PeerPanicked()
	m.LargeFrameDropped()
	for _, r := range p2p.RefusalReasons() {
		m.ConnectionRefused(r)
	}
	after := scrape(t, h)
	wantSamples(t, after, samples)
}
