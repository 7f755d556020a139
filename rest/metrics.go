package rest

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cfindexd/cfindexd/store"
)

// metricsNamespace prefixes every metric name.
const metricsNamespace = "cfindexd"

// rateWindow is the shortest interval over which the index rate gauge is
// measured, so one-block commits at the tip do not make it jump.
const rateWindow = time.Second

// Metrics holds cfindexd's Prometheus metrics in a private registry (never
// the global default one). Its methods are what the other packages report
// through: it satisfies indexer.Observer (NodeTip, Committed, Reorg, Error)
// and p2p.Metrics (MessageReceived, MessageSent, PeersConnected,
// PeerDisconnected). All methods are safe for concurrent use and cheap.
type Metrics struct {
	reg   *prometheus.Registry
	serve http.Handler

	indexedHeight prometheus.Gauge
	nodeHeight    prometheus.Gauge
	blocksIndexed prometheus.Counter
	indexRate     prometheus.Gauge
	filterBytes   prometheus.Counter
	reorgs        prometheus.Counter
	reorgBlocks   prometheus.Counter
	peers         prometheus.Gauge
	p2pRecvMsgs   *prometheus.CounterVec
	p2pRecvBytes  *prometheus.CounterVec
	p2pSentMsgs   *prometheus.CounterVec
	p2pSentBytes  *prometheus.CounterVec
	p2pDisconnect *prometheus.CounterVec
	httpRequests  *prometheus.CounterVec
	errors        *prometheus.CounterVec
	storeSize     prometheus.Gauge

	// limits: the HTTP server's connection and bulk limits and handler
	// panics (metrics_limits.go).
	limits *limitMetrics

	nodeTip atomic.Int64 // -1 until the first NodeTip

	now         func() time.Time
	mu          sync.Mutex
	rateStart   time.Time
	rateBlocks  int
	rateStarted bool
}

// NewMetrics creates the metrics and their registry.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), now: time.Now}
	m.nodeTip.Store(-1)
	g := func(name, help string) prometheus.Gauge {
		c := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: name, Help: help})
		m.reg.MustRegister(c)
		return c
	}
	c := func(name, help string) prometheus.Counter {
		x := prometheus.NewCounter(prometheus.CounterOpts{Namespace: metricsNamespace, Name: name, Help: help})
		m.reg.MustRegister(x)
		return x
	}
	cv := func(name, help string, labels ...string) *prometheus.CounterVec {
		x := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metricsNamespace, Name: name, Help: help}, labels)
		m.reg.MustRegister(x)
		return x
	}
	m.indexedHeight = g("indexed_height", "Height of the highest indexed block of the active chain.")
	m.nodeHeight = g("node_height", "Height of the node's tip as last seen.")
	m.blocksIndexed = c("blocks_indexed_total", "Blocks whose filters were built and committed.")
	m.indexRate = g("index_rate_blocks_per_second", "Blocks indexed per second, last measured over at least one second.")
	m.filterBytes = c("filter_bytes_total", "Bytes of BIP-158 filters committed.")
	m.reorgs = c("reorgs_total", "Chain reorganisations followed (rollbacks).")
	m.reorgBlocks = c("reorg_blocks_total", "Blocks disconnected by reorganisations.")
	m.peers = g("p2p_peers_connected", "P2P peers past the handshake.")
	m.p2pRecvMsgs = cv("p2p_messages_received_total", "P2P messages received, by command.", "command")
	m.p2pRecvBytes = cv("p2p_received_bytes_total", "P2P bytes received (headers included), by command.", "command")
	m.p2pSentMsgs = cv("p2p_messages_sent_total", "P2P messages served, by command.", "command")
	m.p2pSentBytes = cv("p2p_sent_bytes_total", "P2P bytes served (headers included), by command.", "command")
	m.p2pDisconnect = cv("p2p_disconnects_total", "P2P connections ended, by cause.", "cause")
	m.httpRequests = cv("http_requests_total", "HTTP requests, by route and status code.", "route", "code")
	m.errors = cv("errors_total", "Errors, by kind.", "kind")
	m.storeSize = g("store_size_bytes", "Size of the filter store on disk.")
	m.limits = newLimitMetrics(m.reg)
	m.serve = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	return m
}

// WatchPrevouts exports counts, read at every scrape, as
// cfindexd_prevouts_resolved_total{from="cache"} and {from="node"}: spent
// scripts the block source resolved from its cache and by asking the node.
// Call it at most once.
func (m *Metrics) WatchPrevouts(counts func() (fromCache, fromNode uint64)) {
	for _, from := range []string{"cache", "node"} {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace:   metricsNamespace,
			Name:        "prevouts_resolved_total",
			Help:        "Spent output scripts resolved by the txindex source, by where from (its script cache, or the node).",
			ConstLabels: prometheus.Labels{"from": from},
		}, func() float64 {
			c, n := counts()
			if from == "cache" {
				return float64(c)
			}
			return float64(n)
		}))
	}
}

// Registry returns the private registry, for packages that add their own
// collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// handler serves the registry in the Prometheus text format.
func (m *Metrics) handler() http.Handler { return m.serve }

// NodeTip records the node's tip height as last seen (indexer.Observer).
func (m *Metrics) NodeTip(height int64) {
	m.nodeTip.Store(height)
	m.nodeHeight.Set(float64(height))
}

// NodeHeight returns the node's tip height as last seen; false before the
// first NodeTip.
func (m *Metrics) NodeHeight() (int64, bool) {
	h := m.nodeTip.Load()
	return h, h >= 0
}

// Committed records a committed batch (indexer.Observer): the new tip, the
// number of blocks and the bytes of their filters.
func (m *Metrics) Committed(tip store.Tip, blocks int, filterBytes int) {
	m.indexedHeight.Set(float64(tip.Height))
	if blocks > 0 {
		m.blocksIndexed.Add(float64(blocks))
	}
	if filterBytes > 0 {
		m.filterBytes.Add(float64(filterBytes))
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.rateStarted {
		m.rateStarted, m.rateStart = true, now
		return
	}
	m.rateBlocks += blocks
	if el := now.Sub(m.rateStart); el >= rateWindow {
		m.indexRate.Set(float64(m.rateBlocks) / el.Seconds())
		m.rateStart, m.rateBlocks = now, 0
	}
}

// Reorg records a rollback of depth blocks (indexer.Observer).
func (m *Metrics) Reorg(depth int) {
	m.reorgs.Inc()
	if depth > 0 {
		m.reorgBlocks.Add(float64(depth))
	}
}

// Error counts one error of kind ("node", "store", "network", "http", ...).
func (m *Metrics) Error(kind string) { m.errors.WithLabelValues(kind).Inc() }

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

// PeersConnected sets the number of peers past the handshake (p2p.Metrics).
func (m *Metrics) PeersConnected(n int) { m.peers.Set(float64(n)) }

// PeerDisconnected counts one ended P2P connection by cause (p2p.Metrics).
func (m *Metrics) PeerDisconnected(cause string) { m.p2pDisconnect.WithLabelValues(cause).Inc() }

// SetStoreSize records the size of the store on disk.
func (m *Metrics) SetStoreSize(bytes int64) { m.storeSize.Set(float64(bytes)) }

// SetIndexedHeight records the indexed tip height (the server refreshes it
// from the store at each scrape, so it is right after a restart too).
func (m *Metrics) SetIndexedHeight(height uint32) { m.indexedHeight.Set(float64(height)) }

// httpRequest counts one answered HTTP request.
func (m *Metrics) httpRequest(r route, code int) {
	m.httpRequests.WithLabelValues(r.String(), strconv.Itoa(code)).Inc()
}
