package rest

import (
	"testing"

	"github.com/cfindexd/cfindexd/p2p"
)

// The P2P defence counters are exported at 0 before anything happens and
// move with each p2p.Metrics call.
func TestP2PDefenceMetrics(t *testing.T) {
	m := NewMetrics()
	s, err := New(Config{}, recordedView(t), m, zerologNop())
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	type sample struct {
		name   string
		labels []string
	}
	samples := []sample{
		{"cfindexd_p2p_evictions_total", nil},
		{"cfindexd_p2p_discouraged_total", nil},
		{"cfindexd_p2p_send_stalls_total", nil},
		{"cfindexd_p2p_upload_target_refusals_total", nil},
		{"cfindexd_p2p_panics_total", nil},
		{"cfindexd_p2p_large_frames_dropped_total", nil},
	}
	for _, r := range p2p.RefusalReasons() {
		samples = append(samples, sample{"cfindexd_p2p_refused_total", []string{"reason", r}})
	}
	before := scrape(t, h)
	for _, s := range samples {
		if got := metricValue(before, s.name, s.labels...); got != 0 {
			t.Errorf("%s%v = %v at start, want 0", s.name, s.labels, got)
		}
	}

	m.PeerEvicted()
	m.PeerDiscouraged()
	m.SendStalled()
	m.UploadTargetRefused()
	m.PeerPanicked()
	m.LargeFrameDropped()
	for _, r := range p2p.RefusalReasons() {
		m.ConnectionRefused(r)
	}
	after := scrape(t, h)
	for _, s := range samples {
		if got := metricValue(after, s.name, s.labels...); got != 1 {
			t.Errorf("%s%v = %v after one event, want 1", s.name, s.labels, got)
		}
	}
}
