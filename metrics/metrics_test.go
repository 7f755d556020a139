package metrics

import (
	"bytes"
	"errors"
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cfindexd/cfindexd/httpapi"
	"github.com/cfindexd/cfindexd/store"
)

// newMetricsHandler returns fresh Metrics and the handler of a server on
// the recorded view that exports them.
func newMetricsHandler(t *testing.T) (*Metrics, http.Handler) {
	t.Helper()
	m := New()
	return m, newServer(t, tipView{}, m)
}

// metricSample is one series of /metrics (its name and label pairs) and
// the value a test wants it at.
type metricSample struct {
	name   string
	labels []string
	want   float64
}

// wantZeroAtStart fails the test for each sample not exported at 0 in fams.
func wantZeroAtStart(t *testing.T, fams map[string]*dto.MetricFamily, samples []metricSample) {
	t.Helper()
	for _, s := range samples {
		if got := metricValue(fams, s.name, s.labels...); got != 0 {
			t.Errorf("%s%v = %v at start, want 0", s.name, s.labels, got)
		}
	}
}

// wantSamples fails the test for each sample not at its want in fams.
func wantSamples(t *testing.T, fams map[string]*dto.MetricFamily, samples []metricSample) {
	t.Helper()
	for _, s := range samples {
		if got := metricValue(fams, s.name, s.labels...); got != s.want {
			t.Errorf("%s%v = %v, want %v", s.name, s.labels, got, s.want)
		}
	}
}

// scrape GETs /metrics and parses it with Prometheus' own text parser.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	resp, b := do(t, h, "GET", "/metrics")
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, b)
	}
	return fams
}

// metricValue returns the value of the sample of name whose labels include
// labels (name=value pairs); -1 if absent.
func metricValue(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f, ok := fams[name]
	if !ok {
		return -1
	}
next:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		}
	}
	return -1
}

// TestMetricsMove drives every Metrics method and HTTP requests, and checks
// /metrics parses and each counter moves by what was done.
func TestMetricsMove(t *testing.T) {
	m := New()
	now := time.Unix(1_700_000_000, 0)
	m.now = func() time.Time { return now }
	v := tipView{}
	h := newServer(t, v, m)

	before := scrape(t, h)
	if got := metricValue(before, "cfindexd_indexed_height"); got != 115 {
		t.Errorf("indexed height %v before any commit, want the store tip 115", got)
	}
	tipHdr, _ := v.HeaderAt(tipHeight)
	if got := metricValue(before, "cfindexd_last_indexed_timestamp_seconds"); got != float64(tipHdr.Timestamp.Unix()) {
		t.Errorf("last indexed timestamp %v, want the store tip's block time %d", got, tipHdr.Timestamp.Unix())
	}
	if got := metricValue(before, "cfindexd_store_size_bytes"); got != 4096 {
		t.Errorf("store size %v", got)
	}

	m.WatchPrevouts(func() (uint64, uint64) { return 70, 3 })
	m.NodeTip(130, now.Add(-90*time.Second))
	m.NodeReachable(nil)
	m.Committed(store.Tip{Height: 120}, 5, 1000)
	now = now.Add(2 * time.Second)
	m.Committed(store.Tip{Height: 130}, 10, 3000)
	m.Reorg(2)
	m.Error("node")
	m.Error("node")
	m.MessageReceived("getcfilters", 61)
	m.MessageSent("cfilter", 300)
	m.MessageSent("cfilter", 200)
	m.MessagesSent("cfilter", 3, 700)
	m.PeersConnected(3)
	m.PeerDisconnected("closed")
	do(t, h, "GET", "/rest/blockfilter/basic/4474bc8d5b2033a2e5db6fcc8c018dea5faca38d99b0535a41560c3ec29e6452.bin")
	do(t, h, "GET", "/rest/blockfilter/basic/xyz.bin")
	do(t, h, "GET", "/healthz")

	after := scrape(t, h)
	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"cfindexd_node_height", nil, 130},
		{"cfindexd_node_up", nil, 1},
		{"cfindexd_node_tip_age_seconds", nil, 92},
		{"cfindexd_indexed_height", nil, 115}, // refreshed from the store at scrape
		{"cfindexd_blocks_indexed_total", nil, 15},
		{"cfindexd_index_rate_blocks_per_second", nil, 7.5}, // 15 blocks in the 2 s since the first commit
		{"cfindexd_filter_bytes_total", nil, 4000},
		{"cfindexd_reorgs_total", nil, 1},
		{"cfindexd_reorg_blocks_total", nil, 2},
		{"cfindexd_errors_total", []string{"kind", "node"}, 2},
		{"cfindexd_errors_total", []string{"kind", "store"}, 0},
		{"cfindexd_prevouts_resolved_total", []string{"from", "cache"}, 70},
		{"cfindexd_prevouts_resolved_total", []string{"from", "node"}, 3},
		{"cfindexd_p2p_messages_received_total", []string{"command", "getcfilters"}, 1},
		{"cfindexd_p2p_received_bytes_total", []string{"command", "getcfilters"}, 61},
		{"cfindexd_p2p_messages_sent_total", []string{"command", "cfilter"}, 5},
		{"cfindexd_p2p_sent_bytes_total", []string{"command", "cfilter"}, 1200},
		{"cfindexd_p2p_peers_connected", nil, 3},
		{"cfindexd_p2p_disconnects_total", []string{"cause", "closed"}, 1},
		{"cfindexd_p2p_disconnects_total", []string{"cause", "misbehaving"}, 0},
		{"cfindexd_http_requests_total", []string{"route", "rest_blockfilter", "code", "200"}, 1},
		{"cfindexd_http_requests_total", []string{"route", "rest_blockfilter", "code", "400"}, 1},
		{"cfindexd_http_requests_total", []string{"route", "healthz", "code", "200"}, 1},
		{"cfindexd_http_requests_total", []string{"route", "metrics", "code", "200"}, 1},
		{"cfindexd_http_requests_total", []string{"route", "bulk_filters", "code", "200"}, 0},
	}
	for _, c := range checks {
		if got := metricValue(after, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	for route, want := range map[string]uint64{"rest_blockfilter": 2, "healthz": 1, "metrics": 1, "bulk_filters": 0} {
		if got := histogramCount(after, "cfindexd_http_request_duration_seconds", "route", route); got != want {
			t.Errorf("request duration histogram of %s counts %d, want %d", route, got, want)
		}
	}
	m.NodeReachable(errors.New("connection refused"))
	if got := metricValue(scrape(t, h), "cfindexd_node_up"); got != 0 {
		t.Errorf("node_up %v after an unreachable round, want 0", got)
	}
}

// TestNodeTipAgeNeverNegative: a node tip stamped ahead of the clock
// (simnet mines faster than a block a second) is 0 s old, never negative.
func TestNodeTipAgeNeverNegative(t *testing.T) {
	m := New()
	now := time.Unix(1_700_000_000, 0)
	m.now = func() time.Time { return now }
	h := newServer(t, tipView{}, m)
	m.NodeTip(130, now.Add(16*time.Second))
	if got := metricValue(scrape(t, h), "cfindexd_node_tip_age_seconds"); got != 0 {
		t.Errorf("node tip 16 s ahead of the clock: cfindexd_node_tip_age_seconds %v, want 0", got)
	}
}

// histogramCount returns the sample count of the histogram name whose label
// key has value; 0 if absent.
func histogramCount(fams map[string]*dto.MetricFamily, name, key, value string) uint64 {
	for _, m := range fams[name].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == key && lp.GetValue() == value {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}

// TestMetricsPresentFromStart: before any event, /metrics already has the
// Go and process collectors, the build info, every error kind, P2P
// disconnect cause and sent command, every route's request counter (at
// the code it answers when nothing goes wrong) and duration histogram,
// both prevout sources and node_up, all at 0; the gauges that cannot be
// known yet (the node's tip age) and series that can never move are
// absent.
func TestMetricsPresentFromStart(t *testing.T) {
	m := New()
	h := newServer(t, tipView{empty: true}, m)
	fams := scrape(t, h)
	for _, name := range []string{"go_goroutines", "go_memstats_alloc_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds"} {
		if _, ok := fams[name]; !ok && (runtime.GOOS == "linux" || strings.HasPrefix(name, "go_")) {
			t.Errorf("%s missing", name)
		}
	}
	zero := [][]string{{"cfindexd_node_up"}, {"cfindexd_index_rate_blocks_per_second"}, {"cfindexd_blocks_indexed_total"}}
	for _, kind := range []string{"node", "store", "network", "reorg", "http"} {
		zero = append(zero, []string{"cfindexd_errors_total", "kind", kind})
	}
	for _, cause := range []string{"misbehaving", "timeout", "closed", "rejected", "shutdown"} {
		zero = append(zero, []string{"cfindexd_p2p_disconnects_total", "cause", cause})
	}
	for _, cmd := range []string{"version", "verack", "headers", "cfilter", "cfheaders", "cfcheckpt", "block", "notfound", "inv"} {
		zero = append(zero, []string{"cfindexd_p2p_messages_sent_total", "command", cmd}, []string{"cfindexd_p2p_sent_bytes_total", "command", cmd})
	}
	for _, from := range []string{"cache", "node"} {
		zero = append(zero, []string{"cfindexd_prevouts_resolved_total", "from", from})
	}
	for r, code := range httpapi.RouteCodes() {
		zero = append(zero, []string{"cfindexd_http_requests_total", "route", r, "code", strconv.Itoa(code)})
		if f := fams["cfindexd_http_request_duration_seconds"]; histogramCount(fams, f.GetName(), "route", r) != 0 || !hasLabel(f, "route", r) {
			t.Errorf("duration histogram of route %s missing", r)
		}
	}
	for _, z := range zero {
		if got := metricValue(fams, z[0], z[1:]...); got != 0 {
			t.Errorf("%s%v = %v at start, want 0", z[0], z[1:], got)
		}
	}
	// A route that never answers 200 has no 200 series from the start.
	for _, r := range []string{"other", "rest_unknown", "bulk_bad_request"} {
		if got := metricValue(fams, "cfindexd_http_requests_total", "route", r, "code", "200"); got != -1 {
			t.Errorf("http_requests_total{route=%q,code=\"200\"} exported (%v); that route never answers 200", r, got)
		}
	}
	for _, absent := range []string{"cfindexd_node_tip_age_seconds", "cfindexd_last_indexed_timestamp_seconds"} {
		if _, ok := fams[absent]; ok {
			t.Errorf("%s exported before it is known", absent)
		}
	}
	if got := metricValue(fams, "cfindexd_build_info", "version", "unknown", "goversion", runtime.Version()); got != 1 {
		t.Errorf("build_info before SetBuildInfo: %v", got)
	}
	m.SetBuildInfo("1.2.3")
	fams = scrape(t, h)
	if got := metricValue(fams, "cfindexd_build_info", "version", "1.2.3", "goversion", runtime.Version()); got != 1 || len(fams["cfindexd_build_info"].GetMetric()) != 1 {
		t.Errorf("build_info after SetBuildInfo: %v, %d series", got, len(fams["cfindexd_build_info"].GetMetric()))
	}
}

// hasLabel reports whether a sample of f has the label key=value.
func hasLabel(f *dto.MetricFamily, key, value string) bool {
	for _, m := range f.GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == key && lp.GetValue() == value {
				return true
			}
		}
	}
	return false
}

// TestBuildCommit reads the VCS revision the Go toolchain records.
func TestBuildCommit(t *testing.T) {
	tests := []struct {
		settings []debug.BuildSetting
		want     string
	}{
		{nil, "unknown"},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "8448120abc"}, {Key: "vcs.modified", Value: "false"}}, "8448120abc"},
		{[]debug.BuildSetting{{Key: "vcs.modified", Value: "true"}, {Key: "vcs.revision", Value: "8448120abc"}}, "8448120abc+dirty"},
	}
	for _, tc := range tests {
		if got := commitOf(tc.settings); got != tc.want {
			t.Errorf("commitOf(%v) = %q, want %q", tc.settings, got, tc.want)
		}
	}
}

// TestIndexRateFallsToZero: the rate is measured over a sliding window at
// scrape time, so it drops to 0 once commits stop, instead of keeping the
// last batch's rate.
func TestIndexRateFallsToZero(t *testing.T) {
	m := New()
	now := time.Unix(1_700_000_000, 0)
	m.now = func() time.Time { return now }
	if got := m.indexRate(); got != 0 {
		t.Fatalf("rate %v before any commit", got)
	}
	for range 20 { // 100 blocks a second for 20 s
		for range 4 {
			m.Committed(store.Tip{}, 25, 0)
			now = now.Add(250 * time.Millisecond)
		}
	}
	if got := m.indexRate(); got < 90 || got > 110 {
		t.Fatalf("rate %v while indexing 100 blocks/s", got)
	}
	now = now.Add(5 * time.Second)
	if got := m.indexRate(); got < 40 || got > 60 {
		t.Fatalf("rate %v half a window after the last commit, want about 50", got)
	}
	now = now.Add(rateWindowLength)
	if got := m.indexRate(); got != 0 {
		t.Fatalf("rate %v a whole window after the last commit, want 0", got)
	}
}

// TestMetricsPrivateRegistry: two Metrics coexist (no global registration)
// and nothing is registered in the default registry.
func TestMetricsPrivateRegistry(t *testing.T) {
	a, b := New(), New()
	a.Error("x")
	count := func(m *Metrics) int {
		fams, err := m.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, f := range fams {
			for _, s := range f.GetMetric() {
				for _, lp := range s.GetLabel() {
					if f.GetName() == "cfindexd_errors_total" && lp.GetValue() == "x" {
						n++
					}
				}
			}
		}
		return n
	}
	if count(a) != 1 || count(b) != 0 {
		t.Errorf("errors_total{kind=\"x\"}: %d series in a, %d in b; want 1 and 0", count(a), count(b))
	}
	fams, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), "cfindexd_") {
			t.Errorf("%s is in the default registry", f.GetName())
		}
	}
}
