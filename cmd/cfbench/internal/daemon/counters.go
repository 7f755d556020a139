package daemon

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// WhyCounters are the metrics that say why a peer or an HTTP client was
// turned away or slowed: P2P disconnects by cause, evictions, refusals at
// accept, discouragements, stalls, upload-target refusals, HTTP evictions,
// refusals and cuts, BIP-37 filters refused and BIP-37 work.
var WhyCounters = []string{
	"cfindexd_p2p_disconnects_total", "cfindexd_p2p_evictions_total", "cfindexd_p2p_refused_total",
	"cfindexd_p2p_discouraged_total", "cfindexd_p2p_send_stalls_total", "cfindexd_p2p_upload_target_refusals_total",
	"cfindexd_http_connections_evicted_total", "cfindexd_http_connections_refused_total", "cfindexd_http_bulk_refused_total",
	"cfindexd_http_slow_cut_total", "cfindexd_bip37_filters_refused_total", "cfindexd_bip37_work_seconds_total",
	"cfindexd_bip37_filtered_blocks_total",
}

// Counters reads cfindexd's /metrics on httpAddr and returns the non-zero
// samples of the metrics named (labels kept in the key, as the exposition
// writes them).
func Counters(ctx context.Context, httpAddr string, names []string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics: %s", resp.Status)
	}
	out := make(map[string]float64)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(key, "#") {
			continue
		}
		name, _, _ := strings.Cut(key, "{")
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || v == 0 {
			continue
		}
		for _, n := range names {
			if name == n {
				out[key] = v
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return out, nil
}
