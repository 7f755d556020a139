package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cfindexd/cfindexd/p2p"
)

var _ p2p.TransportMetrics = (*Metrics)(nil)

// transportMetrics are the P2P peers and bytes by transport (v1, v2) and
// the v2 handshakes by result, all registered at 0.
type transportMetrics struct {
	peers      *prometheus.GaugeVec
	bytes      *prometheus.CounterVec
	handshakes *prometheus.CounterVec
}

func newTransportMetrics(reg *prometheus.Registry) *transportMetrics {
	t := &transportMetrics{
		peers: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: "p2p_transport_peers",
			Help: "P2P peers past the handshake, by transport (v1, v2: BIP-324)."}, []string{"transport"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "p2p_transport_bytes_total",
			Help: "P2P message bytes on the wire (v2: packets, their overhead included), by transport and direction (received, sent)."},
			[]string{"transport", "direction"}),
		handshakes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "p2p_v2_handshakes_total",
			Help: "BIP-324 v2 handshakes by result: ok, failed (the initiator's fault), refused_rate (its netgroup over its rate), refused_busy (no slot before the deadline)."},
			[]string{"result"}),
	}
	reg.MustRegister(t.peers, t.bytes, t.handshakes)
	for _, tr := range p2p.Transports() {
		t.peers.WithLabelValues(tr)
		t.bytes.WithLabelValues(tr, "received")
		t.bytes.WithLabelValues(tr, "sent")
	}
	for _, r := range p2p.V2HandshakeResults() {
		t.handshakes.WithLabelValues(r)
	}
	return t
}

// TransportPeers sets the peers on one transport (p2p.TransportMetrics).
func (m *Metrics) TransportPeers(transport string, n int) {
	m.transport.peers.WithLabelValues(transport).Set(float64(n))
}

// TransportBytes counts bytes received and sent on one transport
// (p2p.TransportMetrics).
func (m *Metrics) TransportBytes(transport string, received, sent int) {
	if received > 0 {
		m.transport.bytes.WithLabelValues(transport, "received").Add(float64(received))
	}
	if sent > 0 {
		m.transport.bytes.WithLabelValues(transport, "sent").Add(float64(sent))
	}
}

// V2Handshake counts one v2 handshake by result (p2p.TransportMetrics).
func (m *Metrics) V2Handshake(result string) {
	m.transport.handshakes.WithLabelValues(result).Inc()
}
