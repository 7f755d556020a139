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

// The transport metrics are exported at 0 for v1 and v2 and every
// handshake result, and move with each p2p.TransportMetrics call.
func TestP2PTransportMetrics(t *testing.T) {
	m, h := newMetricsHandler(t)
	var samples []metricSample
	for _, tr := range p2p.Transports() {
		samples = append(samples,
			metricSample{"cfindexd_p2p_transport_peers", []string{"transport", tr}, 2},
			metricSample{"cfindexd_p2p_transport_bytes_total", []string{"direction", "received", "transport", tr}, 100},
			metricSample{"cfindexd_p2p_transport_bytes_total", []string{"direction", "sent", "transport", tr}, 30})
	}
	for _, r := range p2p.V2HandshakeResults() {
		samples = append(samples, metricSample{"cfindexd_p2p_v2_handshakes_total", []string{"result", r}, 1})
	}
	wantZeroAtStart(t, scrape(t, h), samples)
	for _, tr := range p2p.Transports() {
		m.TransportPeers(tr, 2)
		m.TransportBytes(tr, 60, 0)
		m.TransportBytes(tr, 40, 30)
	}
	for _, r := range p2p.V2HandshakeResults() {
		m.V2Handshake(r)
	}
	wantSamples(t, scrape(t, h), samples)
}
