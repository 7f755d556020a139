package metrics

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

	"github.com/cfindexd/cfindexd/httpapi"
	"github.com/cfindexd/cfindexd/indexer"
	"github.com/cfindexd/cfindexd/p2p"
	"github.com/cfindexd/cfindexd/p2p/bip37"
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
// indexer.Observer (NodeTip, NodeReachable, Committed, Reorg, Error),
// p2p.Metrics (MessageReceived, MessageSent, PeersConnected,
// PeerDisconnected and the defence counters below), bip37.Metrics and
// httpapi.Metrics. Every counter and every label value the code knows is
// exported from the start, at 0, so a rate() or an alert works before the
// first event. All methods are safe for concurrent use and cheap.
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
	transport     *transportMetrics
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
	// checked: stored values failing their checksum, and their repairs
	// (store.go).
	checked checkedMetrics
	sp      checkedMetrics

	nodeTip     atomic.Int64 // -1 until the first NodeTip
	nodeTipTime atomic.Int64 // Unix seconds of the node's tip block; valid once nodeTip >= 0
	// indexedTime is the Unix time of the indexed tip's block, -1 while
	// the index is empty or not yet read.
	indexedTime atomic.Int64
	reach       atomic.Pointer[reachability]
	// publish: the bucket publisher's metrics, nil until WatchPublish
	// (publish.go).
	publish  atomic.Pointer[publishMetrics]
	prevouts atomic.Pointer[func() (fromCache, fromNode uint64)]

	now  func() time.Time
	mu   sync.Mutex // guards rate
	rate rateWindow
}

// reachability is the node's state as the follower last reported it.
type reachability struct {
	err error // nil: the node answered
}

// The interfaces the other packages declare for what they report.
var (
	_ indexer.Observer = (*Metrics)(nil)
	_ p2p.Metrics      = (*Metrics)(nil)
	_ p2p.BatchMetrics = (*Metrics)(nil)
	_ bip37.Metrics    = (*Metrics)(nil)
	_ httpapi.Metrics  = (*Metrics)(nil)
)

// New creates the metrics and their registry.
func New() *Metrics {
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
	for r, code := range httpapi.RouteCodes() {
		m.httpRequests.WithLabelValues(r, strconv.Itoa(code))
		m.httpDuration.WithLabelValues(r)
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
	m.transport = newTransportMetrics(m.reg)

	m.limits = newLimitMetrics(m.reg)
	m.bloom = newBloomMetrics(m.reg)
	m.checked = newCheckedMetrics(m.reg, "store",
		"Stored filters, filter hashes, filter headers or cfilter checksums found failing their checksum (each counted once until repaired); none of them is served.",
		"Heights whose filter was rebuilt from the node and rewritten after a checksum mismatch.")
	// The silent-payment index's reach is read from the index at scrape
	// time (WatchSilentPayments), since the follower and the backfill both
	// move it; its damage and repairs are counted here.
	m.sp = newCheckedMetrics(m.reg, "silentpay",
		"Heights of the silent-payment index found holding a value that fails its checksum (each counted once until rebuilt); none of them is served.",
		"Rewinds of the silent-payment index below a damaged height, whose blocks the background build then rebuilds from the node.")

	m.serve = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	return m
}

// errorKinds lists every kind Error is called with: the follower's, and
// the HTTP server's for a request that failed on the server's side.
func errorKinds() []string {
	return append(indexer.ErrorKinds(), httpapi.ErrorKind)
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

// Handler serves the registry in the Prometheus text format
// (httpapi.Metrics).
func (m *Metrics) Handler() http.Handler { return m.serve }

// NodeTip records the node's tip as last seen: its height and its block
// timestamp (indexer.Observer).
func (m *Metrics) NodeTip(height int64, blockTime time.Time) {
	m.nodeTipTime.Store(blockTime.Unix())
	m.nodeTip.Store(height)
	m.nodeHeight.Set(float64(height))
}

// NodeHeight returns the node's tip height as last seen; false before the
// first NodeTip (httpapi.NodeState).
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
// round (httpapi.NodeState).
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
// "http", ...): indexer.Observer and httpapi.Observer.
func (m *Metrics) Error(kind string) { m.errors.WithLabelValues(kind).Inc() }

// SetStoreSize records the size of the store on disk (httpapi.Observer).
func (m *Metrics) SetStoreSize(bytes int64) { m.storeSize.Set(float64(bytes)) }

// SetIndexedHeight records the indexed tip height (the server refreshes it
// from the store at each scrape, so it is right after a restart too).
func (m *Metrics) SetIndexedHeight(height uint32) { m.indexedHeight.Set(float64(height)) }

// SetIndexedTip records the indexed tip's height and block timestamp (the
// HTTP server refreshes both from the store at each scrape:
// httpapi.Observer).
func (m *Metrics) SetIndexedTip(height uint32, blockTime time.Time) {
	m.indexedHeight.Set(float64(height))
	m.indexedTime.Store(blockTime.Unix())
}

func (m *Metrics) lastIndexedTimestamp() (float64, bool) {
	t := m.indexedTime.Load()
	return float64(t), t >= 0
}

// HTTPRequest counts one answered HTTP request and its duration
// (httpapi.Observer).
func (m *Metrics) HTTPRequest(route string, code int, took time.Duration) {
	m.httpRequests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	m.httpDuration.WithLabelValues(route).Observe(took.Seconds())
}
