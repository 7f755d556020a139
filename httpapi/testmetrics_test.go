package httpapi

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"
)

// testMetrics is the Metrics of the tests: it keeps each value under the
// name and labels of the Prometheus series package metrics exports it as,
// and holds the node's state the tests set.
type testMetrics struct {
	mu      sync.Mutex
	vals    map[string]float64
	nodeTip int64 // -1 until NodeTip
	reach   *error
}

var _ Metrics = (*testMetrics)(nil)

func newTestMetrics() *testMetrics {
	return &testMetrics{vals: make(map[string]float64), nodeTip: -1}
}

// testMetrics returns the metrics of a server made by the tests.
func (s *Server) testMetrics() *testMetrics { return s.metrics.(*testMetrics) }

func seriesKey(name string, labels ...string) string { return name + fmt.Sprint(labels) }

func (m *testMetrics) add(v float64, name string, labels ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.vals[seriesKey(name, labels...)] += v
}

func (m *testMetrics) set(v float64, name string, labels ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.vals[seriesKey(name, labels...)] = v
}

// value returns the series name{labels} (name=value pairs in the order
// the server reports them); 0 if it was never reported.
func (m *testMetrics) value(name string, labels ...string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.vals[seriesKey(name, labels...)]
}

func (m *testMetrics) HTTPRequest(route string, code int, _ time.Duration) {
	m.add(1, "cfindexd_http_requests_total", "route", route, "code", strconv.Itoa(code))
}
func (m *testMetrics) HTTPConnsOpen(n int) { m.set(float64(n), "cfindexd_http_connections_open") }
func (m *testMetrics) HTTPConnRefused(c string) {
	m.add(1, "cfindexd_http_connections_refused_total", "cap", c)
}
func (m *testMetrics) HTTPConnEvicted(c string) {
	m.add(1, "cfindexd_http_connections_evicted_total", "cap", c)
}
func (m *testMetrics) HTTPBulkInFlight(n int) { m.set(float64(n), "cfindexd_http_bulk_in_flight") }
func (m *testMetrics) HTTPBulkRefused(c string) {
	m.add(1, "cfindexd_http_bulk_refused_total", "cap", c)
}
func (m *testMetrics) HTTPSlowCut(kind string) {
	m.add(1, "cfindexd_http_slow_cut_total", "kind", kind)
}
func (m *testMetrics) HTTPHandlerPanicked() { m.add(1, "cfindexd_http_handler_panics_total") }
func (m *testMetrics) Error(kind string)    { m.add(1, "cfindexd_errors_total", "kind", kind) }
func (m *testMetrics) SetStoreSize(b int64) { m.set(float64(b), "cfindexd_store_size_bytes") }
func (m *testMetrics) SetIndexedTip(h uint32, _ time.Time) {
	m.set(float64(h), "cfindexd_indexed_height")
}

// NodeTip and NodeReachable set the node's state, as the follower reports
// it to package metrics.
func (m *testMetrics) NodeTip(height int64, _ time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nodeTip = height
}

func (m *testMetrics) NodeReachable(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reach = &err
}

func (m *testMetrics) NodeHeight() (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.nodeTip, m.nodeTip >= 0
}

func (m *testMetrics) NodeReachability() (error, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.reach == nil {
		return nil, false
	}
	return *m.reach, true
}

// Handler lists the series, one "key value" line each.
func (m *testMetrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		m.mu.Lock()
		defer m.mu.Unlock()
		keys := make([]string, 0, len(m.vals))
		for k := range m.vals {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintln(w, k, m.vals[k])
		}
	})
}
