package rest

import (
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cfindexd/cfindexd/indexer"
	"github.com/cfindexd/cfindexd/p2p"
	"github.com/cfindexd/cfindexd/store"
)

// metricsNamespace prefixes every metric name.
const metricsNamespace = "cfindexd"

// httpDurationBuckets are the upper bounds, in seconds, of the HTTP
// request duration histogram: REST answers take milliseconds, bulk files
// up to minutes.
var httpDurationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// Metrics holds cfindexd's Prometheus metrics in a private registry (never
// the global default one), with Go runtime and process collectors. Its
// methods are what the other packages report through: it satisfies
// indexer.Observer (NodeTip, NodeReachable, Committed, Reorg, Error) and
// p2p.Metrics (MessageReceived, MessageSent, PeersConnected,
// PeerDisconnected and the defence counters below). Every counter and
// every label value the code knows is exported from the start, at 0, so a
// rate() or an alert works before the first event. All methods are safe
// for concurrent use and cheap.
type Metrics struct {
	reg   *prometheus.Registry
	serve http.Handler

	indexedHeight prometheus.Gauge
	nodeHeight    prometheus.Gauge
	nodeUp        prometheus.Gauge
	blocksIndexed prometheus.Counter
	filterBytes   prometheus.Counter
	reorgs        prometheus.Counter
	reorgBlocks   prometheus.Counter
	peers         prometheus.Gauge
	p2pRecvMsgs   *prometheus.CounterVec
	p2pRecvBytes  *prometheus.CounterVec
	p2pSentMsgs   *prometheus.CounterVec
	p2pSentBytes  *prometheus.CounterVec
	p2pDisconnect *prometheus.CounterVec
	p2pDefences   p2pDefenceMetrics
	httpRequests  *prometheus.CounterVec
	httpDuration  *prometheus.HistogramVec
	errors        *prometheus.CounterVec
	storeSize     prometheus.Gauge
	buildInfo     *prometheus.GaugeVec

	// limits: the HTTP server's connection and bulk limits and handler
	// panics (metrics_limits.go).
	limits *limitMetrics
	// bloom: BIP-37 serving and the mempool mirror (metrics_bloom.go).
	bloom *bloomMetrics

	nodeTip     atomic.Int64 // -1 until the first NodeTip
	nodeTipTime atomic.Int64 // Unix seconds of the node's tip block; valid once nodeTip >= 0
	// indexedTime is the Unix time of the indexed tip's block, -1 while
	// the index is empty or not yet read.
	indexedTime atomic.Int64
	reach       atomic.Pointer[reachability]
	prevouts    atomic.Pointer[func() (fromCache, fromNode uint64)]

	now  func() time.Time
	mu   sync.Mutex // guards rate
	rate rateWindow
}

// reachability is the node's state as the follower last reported it.
type reachability struct {
	err error // nil: the node answered
}

// NewMetrics creates the metrics and their registry.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), now: time.Now}
	m.nodeTip.Store(-1)
	m.indexedTime.Store(-1)
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
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
	gf := func(name, help string, value func() (float64, bool)) {
		m.reg.MustRegister(newOptionalGauge(prometheus.BuildFQName(metricsNamespace, "", name), help, value))
	}
	m.indexedHeight = g("indexed_height", "Height of the highest indexed block of the active chain.")
	m.nodeHeight = g("node_height", "Height of the node's tip as last seen.")
	m.nodeUp = g("node_up", "1 while the node answered the follower's last round, 0 while it cannot be reached (or before the first round).")
	gf("node_tip_age_seconds", "Seconds since the timestamp of the node's tip block as last seen.", m.nodeTipAge)
	gf("last_indexed_timestamp_seconds", "Unix time of the block header timestamp of the indexed tip.", m.lastIndexedTimestamp)
	m.blocksIndexed = c("blocks_indexed_total", "Blocks whose filters were built and committed.")
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Name: "index_rate_blocks_per_second",
		Help: "Blocks indexed per second over the last " + strconv.Itoa(int(rateWindowLength/time.Second)) + " seconds (0 while nothing is indexed); rate() of blocks_indexed_total is the better series.",
	}, m.indexRate))
	m.filterBytes = c("filter_bytes_total", "Bytes of BIP-158 filters committed.")
	m.reorgs = c("reorgs_total", "Chain reorganisations followed (rollbacks).")
	m.reorgBlocks = c("reorg_blocks_total", "Blocks disconnected by reorganisations.")
	m.httpRequests = cv("http_requests_total", "HTTP requests, by route and status code.", "route", "code")
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: metricsNamespace, Name: "http_request_duration_seconds",
		Help:    "Time from reading an HTTP request to the end of its answer, by route.",
		Buckets: httpDurationBuckets,
	}, []string{"route"})
	m.reg.MustRegister(m.httpDuration)
	for r := range route(len(routeNames)) {
		m.httpRequests.WithLabelValues(r.String(), "200")
		m.httpDuration.WithLabelValues(r.String())
	}
	m.errors = cv("errors_total", "Errors, by kind.", "kind")
	for _, kind := range errorKinds() {
		m.errors.WithLabelValues(kind)
	}
	m.storeSize = g("store_size_bytes", "Size of the filter store on disk.")
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Namespace: metricsNamespace, Name: "prevouts_resolved_total",
		Help:        "Spent output scripts resolved by the txindex source, by where from (its script cache, or the node).",
		ConstLabels: prometheus.Labels{"from": "cache"},
	}, func() float64 { c, _ := m.prevoutCounts(); return float64(c) }))
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Namespace: metricsNamespace, Name: "prevouts_resolved_total",
		Help:        "Spent output scripts resolved by the txindex source, by where from (its script cache, or the node).",
		ConstLabels: prometheus.Labels{"from": "node"},
	}, func() float64 { _, n := m.prevoutCounts(); return float64(n) }))
	m.buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricsNamespace, Name: "build_info",
		Help: "Always 1; the labels say which build runs.",
	}, []string{"version", "commit", "goversion"})
	m.reg.MustRegister(m.buildInfo)
	m.SetBuildInfo("unknown")

	m.newP2PMetrics(cv, g)
	m.p2pDefences = newP2PDefenceMetrics(c, cv)

	m.limits = newLimitMetrics(m.reg)
	m.bloom = newBloomMetrics(m.reg)

	m.serve = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	return m
}

// errorKinds lists every kind Error is called with: the follower's, and
// "http" for a request that failed on the server's side.
func errorKinds() []string {
	return append(indexer.ErrorKinds(), "http")
}

// SetBuildInfo sets cfindexd_build_info{version,commit,goversion} to 1:
// version is the daemon's, the commit is the VCS revision the binary was
// built from (with "+dirty" for a modified tree, as --version and /status
// write it; "unknown" when the build recorded none, as with go run and go
// test), goversion the runtime's.
func (m *Metrics) SetBuildInfo(version string) {
	m.buildInfo.Reset()
	m.buildInfo.WithLabelValues(version, buildCommit(), runtime.Version()).Set(1)
}

// buildCommit returns the VCS revision recorded in the binary.
func buildCommit() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return commitOf(bi.Settings)
}

// commitOf reads vcs.revision and vcs.modified from build settings.
func commitOf(settings []debug.BuildSetting) string {
	rev, dirty := "", false
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}

// WatchPrevouts exports counts, read at every scrape, as
// cfindexd_prevouts_resolved_total{from="cache"} and {from="node"}: spent
// scripts the block source resolved from its cache and by asking the node.
// Until it is called both read 0.
func (m *Metrics) WatchPrevouts(counts func() (fromCache, fromNode uint64)) {
	m.prevouts.Store(&counts)
}

func (m *Metrics) prevoutCounts() (fromCache, fromNode uint64) {
	if f := m.prevouts.Load(); f != nil {
		return (*f)()
	}
	return 0, 0
}

// Registry returns the private registry, for packages that add their own
// collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// handler serves the registry in the Prometheus text format.
func (m *Metrics) handler() http.Handler { return m.serve }

// NodeTip records the node's tip as last seen: its height and its block
// timestamp (indexer.Observer).
func (m *Metrics) NodeTip(height int64, blockTime time.Time) {
	m.nodeTipTime.Store(blockTime.Unix())
	m.nodeTip.Store(height)
	m.nodeHeight.Set(float64(height))
}

// NodeHeight returns the node's tip height as last seen; false before the
// first NodeTip.
func (m *Metrics) NodeHeight() (int64, bool) {
	h := m.nodeTip.Load()
	return h, h >= 0
}

// NodeReachable records whether the node answered the follower's last
// round (nil) or could not be reached (indexer.Observer).
func (m *Metrics) NodeReachable(err error) {
	m.reach.Store(&reachability{err: err})
	if err == nil {
		m.nodeUp.Set(1)
	} else {
		m.nodeUp.Set(0)
	}
}

// NodeReachability returns the error of the follower's last round that
// could not reach the node (nil if it could), and false before the first
// round.
func (m *Metrics) NodeReachability() (error, bool) {
	r := m.reach.Load()
	if r == nil {
		return nil, false
	}
	return r.err, true
}

// nodeTipAge is the age of the node's tip block; unknown before NodeTip.
func (m *Metrics) nodeTipAge() (float64, bool) {
	if m.nodeTip.Load() < 0 {
		return 0, false
	}
	return float64(max(0, m.now().Unix()-m.nodeTipTime.Load())), true // a block stamped ahead of the clock is new
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
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rate.add(m.now(), blocks)
}

// indexRate is the index rate over the sliding window, at scrape time.
func (m *Metrics) indexRate() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rate.perSecond(m.now())
}

// Reorg records a rollback of depth blocks (indexer.Observer).
func (m *Metrics) Reorg(depth int) {
	m.reorgs.Inc()
	if depth > 0 {
		m.reorgBlocks.Add(float64(depth))
	}
}

// Error counts one error of kind ("node", "store", "network", "reorg",
// "http", ...).
func (m *Metrics) Error(kind string) { m.errors.WithLabelValues(kind).Inc() }

// SetStoreSize records the size of the store on disk.
func (m *Metrics) SetStoreSize(bytes int64) { m.storeSize.Set(float64(bytes)) }

// SetIndexedHeight records the indexed tip height (the server refreshes it
// from the store at each scrape, so it is right after a restart too).
func (m *Metrics) SetIndexedHeight(height uint32) { m.indexedHeight.Set(float64(height)) }

// SetIndexedTip records the indexed tip's height and block timestamp (the
// server refreshes both from the store at each scrape).
func (m *Metrics) SetIndexedTip(height uint32, blockTime time.Time) {
	m.indexedHeight.Set(float64(height))
	m.indexedTime.Store(blockTime.Unix())
}

func (m *Metrics) lastIndexedTimestamp() (float64, bool) {
	t := m.indexedTime.Load()
	return float64(t), t >= 0
}

// httpRequest counts one answered HTTP request and its duration.
func (m *Metrics) httpRequest(r route, code int, took time.Duration) {
	m.httpRequests.WithLabelValues(r.String(), strconv.Itoa(code)).Inc()
	m.httpDuration.WithLabelValues(r.String()).Observe(took.Seconds())
}

// --- P2P metrics (p2p.Metrics) ---

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

var _ p2p.BatchMetrics = (*Metrics)(nil)

// PeersConnected sets the number of peers past the handshake (p2p.Metrics).
func (m *Metrics) PeersConnected(n int) { m.peers.Set(float64(n)) }

// PeerDisconnected counts one ended P2P connection by cause (p2p.Metrics).
func (m *Metrics) PeerDisconnected(cause string) { m.p2pDisconnect.WithLabelValues(cause).Inc() }

// --- P2P defences (p2p.Metrics) ---------------------------------------------

// p2pDefenceMetrics count what the P2P server does against hostile peers.
// All are registered at start, so they read 0 before the first event.
type p2pDefenceMetrics struct {
	evictions     prometheus.Counter
	refused       *prometheus.CounterVec
	discouraged   prometheus.Counter
	sendStalls    prometheus.Counter
	uploadRefused prometheus.Counter
	panics        prometheus.Counter
	largeDropped  prometheus.Counter
}

func newP2PDefenceMetrics(c func(name, help string) prometheus.Counter,
	cv func(name, help string, labels ...string) *prometheus.CounterVec) p2pDefenceMetrics {
	d := p2pDefenceMetrics{
		evictions:     c("p2p_evictions_total", "P2P peers evicted to make room for a new connection."),
		refused:       cv("p2p_refused_total", "P2P connections refused at accept, by reason (full, discouraged, per_address, per_subnet).", "reason"),
		discouraged:   c("p2p_discouraged_total", "Misbehaving P2P peers whose address was discouraged."),
		sendStalls:    c("p2p_send_stalls_total", "P2P peers disconnected because their send queue stayed full without draining."),
		uploadRefused: c("p2p_upload_target_refusals_total", "Historical blocks refused (peer disconnected) because the upload target was reached."),
		panics:        c("p2p_panics_total", "Panics recovered in P2P peer goroutines (the peer was disconnected)."),
		largeDropped:  c("p2p_large_frames_dropped_total", "Large P2P messages discarded unread because the receive budget was spent."),
	}
	for _, reason := range p2p.RefusalReasons() {
		d.refused.WithLabelValues(reason)
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

// UploadTargetRefused counts a refused historical block (p2p.Metrics).
func (m *Metrics) UploadTargetRefused() { m.p2pDefences.uploadRefused.Inc() }

// PeerPanicked counts a recovered panic (p2p.Metrics).
func (m *Metrics) PeerPanicked() { m.p2pDefences.panics.Inc() }

// LargeFrameDropped counts a discarded large message (p2p.Metrics).
func (m *Metrics) LargeFrameDropped() { m.p2pDefences.largeDropped.Inc() }

// --- end of P2P metrics ---
