package rest

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cfindexd/cfindexd/indexer"
	"github.com/cfindexd/cfindexd/p2p"
	"github.com/cfindexd/cfindexd/store"
)

// Metrics is what the indexer and the P2P server report through.
var (
	_ indexer.Observer = (*Metrics)(nil)
	_ p2p.Metrics      = (*Metrics)(nil)
)

// scrape GETs /metrics and parses it with Prometheus' own text parser.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	resp := do(t, h, "GET", "/metrics", nil)
	b := body(t, resp)
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
	m := NewMetrics()
	now := time.Unix(1_700_000_000, 0)
	m.now = func() time.Time { return now }
	v := recordedView(t)
	s, err := New(Config{}, v, m, zerologNop())
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()

	before := scrape(t, h)
	if got := metricValue(before, "cfindexd_indexed_height"); got != 115 {
		t.Errorf("indexed height %v before any commit, want the store tip 115", got)
	}
	if got := metricValue(before, "cfindexd_store_size_bytes"); got != 4096 {
		t.Errorf("store size %v", got)
	}

	m.WatchPrevouts(func() (uint64, uint64) { return 70, 3 })
	m.NodeTip(130)
	m.Committed(store.Tip{Height: 120}, 5, 1000)
	now = now.Add(2 * time.Second)
	m.Committed(store.Tip{Height: 130}, 10, 3000)
	m.Reorg(2)
	m.Error("node")
	m.Error("node")
	m.MessageReceived("getcfilters", 61)
	m.MessageSent("cfilter", 300)
	m.MessageSent("cfilter", 200)
	m.PeersConnected(3)
	m.PeerDisconnected("closed")
	do(t, h, "GET", "/rest/blockfilter/basic/4474bc8d5b2033a2e5db6fcc8c018dea5faca38d99b0535a41560c3ec29e6452.bin", nil)
	do(t, h, "GET", "/rest/blockfilter/basic/xyz.bin", nil)
	do(t, h, "GET", "/healthz", nil)

	after := scrape(t, h)
	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"cfindexd_node_height", nil, 130},
		{"cfindexd_indexed_height", nil, 115}, // refreshed from the store at scrape
		{"cfindexd_blocks_indexed_total", nil, 15},
		{"cfindexd_index_rate_blocks_per_second", nil, 5},
		{"cfindexd_filter_bytes_total", nil, 4000},
		{"cfindexd_reorgs_total", nil, 1},
		{"cfindexd_reorg_blocks_total", nil, 2},
		{"cfindexd_errors_total", []string{"kind", "node"}, 2},
		{"cfindexd_prevouts_resolved_total", []string{"from", "cache"}, 70},
		{"cfindexd_prevouts_resolved_total", []string{"from", "node"}, 3},
		{"cfindexd_p2p_messages_received_total", []string{"command", "getcfilters"}, 1},
		{"cfindexd_p2p_received_bytes_total", []string{"command", "getcfilters"}, 61},
		{"cfindexd_p2p_messages_sent_total", []string{"command", "cfilter"}, 2},
		{"cfindexd_p2p_sent_bytes_total", []string{"command", "cfilter"}, 500},
		{"cfindexd_p2p_peers_connected", nil, 3},
		{"cfindexd_p2p_disconnects_total", []string{"cause", "closed"}, 1},
		{"cfindexd_http_requests_total", []string{"route", "rest_blockfilter", "code", "200"}, 1},
		{"cfindexd_http_requests_total", []string{"route", "rest_blockfilter", "code", "400"}, 1},
		{"cfindexd_http_requests_total", []string{"route", "healthz", "code", "200"}, 1},
		{"cfindexd_http_requests_total", []string{"route", "metrics", "code", "200"}, 1},
	}
	for _, c := range checks {
		if got := metricValue(after, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

// TestMetricsPrivateRegistry: two Metrics coexist (no global registration)
// and nothing is registered in the default registry.
func TestMetricsPrivateRegistry(t *testing.T) {
	a, b := NewMetrics(), NewMetrics()
	a.Error("x")
	fa, err := a.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	fb, err := b.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(fa) == len(fb) {
		t.Errorf("a counted an error family b should not have: %d vs %d families", len(fa), len(fb))
	}
}
