package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cfindexd/cfindexd/p2p"
)

// newP2PMetrics registers the P2P metrics with every known label value.
func (m *Metrics) newP2PMetrics(cv func(name, help string, labels ...string) *prometheus.CounterVec, g func(name, help string) prometheus.Gauge) {
	m.peers = g("p2p_peers_connected", "P2P peers past the handshake.")
	m.p2pRecvMsgs = cv("p2p_messages_received_total", "P2P messages received, by command.", "command")
	m.p2pRecvBytes = cv("p2p_received_bytes_total", "P2P bytes received (headers included), by command.", "command")
	m.p2pSentMsgs = cv("p2p_messages_sent_total", "P2P messages served, by command.", "command")
	m.p2pSentBytes = cv("p2p_sent_bytes_total", "P2P bytes served (headers included), by command.", "command")
	m.p2pDisconnect = cv("p2p_disconnects_total", "P2P connections ended, by cause.", "cause")
	for _, cmd := range p2p.SentCommands() {
		m.p2pSentMsgs.WithLabelValues(cmd)
		m.p2pSentBytes.WithLabelValues(cmd)
	}
	for _, cause := range p2p.DisconnectCauses() {
		m.p2pDisconnect.WithLabelValues(cause)
	}
}

// MessageReceived counts one inbound P2P message (p2p.Metrics).
func (m *Metrics) MessageReceived(command string, bytes int) {
	m.p2pRecvMsgs.WithLabelValues(command).Inc()
	m.p2pRecvBytes.WithLabelValues(command).Add(float64(bytes))
}

// MessageSent counts one P2P message served, by type, with its bytes
// (p2p.Metrics).
func (m *Metrics) MessageSent(command string, bytes int) {
	m.p2pSentMsgs.WithLabelValues(command).Inc()
	m.p2pSentBytes.WithLabelValues(command).Add(float64(bytes))
}

// MessagesSent counts count P2P messages of one type served at once, bytes
// in all (p2p.BatchMetrics: a chunk of cfilters is one call, not one per
// filter).
func (m *Metrics) MessagesSent(command string, count, bytes int) {
	m.p2pSentMsgs.WithLabelValues(command).Add(float64(count))
	m.p2pSentBytes.WithLabelValues(command).Add(float64(bytes))
}

// PeersConnected sets the number of peers past the handshake (p2p.Metrics).
func (m *Metrics) PeersConnected(n int) { m.peers.Set(float64(n)) }

// PeerDisconnected counts one ended P2P connection by cause (p2p.Metrics).
func (m *Metrics) PeerDisconnected(cause string) { m.p2pDisconnect.WithLabelValues(cause).Inc() }

// p2pDefenceMetrics count what the P2P server does against hostile peers.
// All are registered at start, so they read 0 before the first event.
type p2pDefenceMetrics struct {
	evictions     prometheus.Counter
	refused       *prometheus.CounterVec
	discouraged   prometheus.Counter
	sendStalls    prometheus.Counter
	uploadRefused *prometheus.CounterVec
	panics        prometheus.Counter
	largeDropped  prometheus.Counter
}

func newP2PDefenceMetrics(c func(name, help string) prometheus.Counter,
	cv func(name, help string, labels ...string) *prometheus.CounterVec) p2pDefenceMetrics {
	d := p2pDefenceMetrics{
		evictions:     c("p2p_evictions_total", "P2P peers evicted to make room for a new connection."),
		refused:       cv("p2p_refused_total", "P2P connections refused at accept, by reason (full, discouraged).", "reason"),
		discouraged:   c("p2p_discouraged_total", "Misbehaving P2P peers whose address was discouraged."),
		sendStalls:    c("p2p_send_stalls_total", "P2P peers disconnected because their send queue stayed full without draining."),
		uploadRefused: cv("p2p_upload_target_refusals_total", "P2P requests refused (peer disconnected) under the upload target, by reason (target, group_share).", "reason"),
		panics:        c("p2p_panics_total", "Panics recovered in P2P peer goroutines (the peer was disconnected)."),
		largeDropped:  c("p2p_large_frames_dropped_total", "Large P2P messages discarded unread because the receive budget was spent."),
	}
	for _, reason := range p2p.RefusalReasons() {
		d.refused.WithLabelValues(reason)
	}
	for _, reason := range p2p.UploadRefusalReasons() {
		d.uploadRefused.WithLabelValues(reason)
	}
	return d
}

// PeerEvicted counts an eviction (p2p.Metrics).
func (m *Metrics) PeerEvicted() { m.p2pDefences.evictions.Inc() }

// ConnectionRefused counts a refused connection by reason (p2p.Metrics).
func (m *Metrics) ConnectionRefused(reason string) {
	m.p2pDefences.refused.WithLabelValues(reason).Inc()
}

// PeerDiscouraged counts a discouraged address (p2p.Metrics).
func (m *Metrics) PeerDiscouraged() { m.p2pDefences.discouraged.Inc() }

// SendStalled counts a peer disconnected for not reading (p2p.Metrics).
func (m *Metrics) SendStalled() { m.p2pDefences.sendStalls.Inc() }

// UploadTargetRefused counts a request refused under the upload target, by
// reason (p2p.Metrics).
func (m *Metrics) UploadTargetRefused(reason string) {
	m.p2pDefences.uploadRefused.WithLabelValues(reason).Inc()
}

// PeerPanicked counts a recovered panic (p2p.Metrics).
func (m *Metrics) PeerPanicked() { m.p2pDefences.panics.Inc() }

// LargeFrameDropped counts a discarded large message (p2p.Metrics).
func (m *Metrics) LargeFrameDropped() { m.p2pDefences.largeDropped.Inc() }
