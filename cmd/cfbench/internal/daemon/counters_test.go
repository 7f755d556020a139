package daemon

import (
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCountersKeepsNamedNonZeroSamples reads an exposition as cfindexd
// writes it: only the named metrics' non-zero samples are kept, labels in
// the key.
func TestCountersKeepsNamedNonZeroSamples(t *testing.T) {
	const exposition = `# HELP cfindexd_p2p_disconnects_total P2P connections ended, by cause.
# TYPE cfindexd_p2p_disconnects_total counter
cfindexd_p2p_disconnects_total{cause="evicted"} 4
cfindexd_p2p_disconnects_total{cause="panic"} 0
cfindexd_p2p_disconnects_total{cause="upload_target"} 24
cfindexd_p2p_evictions_total 4
cfindexd_p2p_peers_connected 120
cfindexd_bip37_work_seconds_total 2.25
`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, exposition)
	}))
	defer srv.Close()
	got, err := Counters(context.Background(), strings.TrimPrefix(srv.URL, "http://"), WhyCounters)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		`cfindexd_p2p_disconnects_total{cause="evicted"}`:       4,
		`cfindexd_p2p_disconnects_total{cause="upload_target"}`: 24,
		"cfindexd_p2p_evictions_total":                          4,
		"cfindexd_bip37_work_seconds_total":                     2.25,
	}
	if !maps.Equal(got, want) {
		t.Errorf("counters %v, want %v", got, want)
	}
	if _, err := Counters(context.Background(), strings.TrimPrefix(srv.URL, "http://")+"/nope", WhyCounters); err == nil {
		t.Error("no error for a server that does not serve /metrics")
	}
}
