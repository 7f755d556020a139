package metrics

import "testing"

// TestSilentPaymentMetrics: the indexed height is absent while the index
// covers nothing and follows the index's state at each scrape; the
// repair counters are exported at 0 and count what the backfill reports.
func TestSilentPaymentMetrics(t *testing.T) {
	m, h := newMetricsHandler(t)
	var up uint32
	covered := false
	m.WatchSilentPayments(func() (uint32, bool) { return up, covered })
	fams := scrape(t, h)
	if got := metricValue(fams, "cfindexd_silentpay_indexed_height"); got != -1 {
		t.Errorf("cfindexd_silentpay_indexed_height = %v while the index covers nothing, want absent", got)
	}
	wantZeroAtStart(t, fams, []metricSample{{name: "cfindexd_silentpay_checksum_mismatches_total"}, {name: "cfindexd_silentpay_repairs_total"}})
	for _, step := range []struct {
		up                  uint32
		mismatches, repairs int
	}{
		{up: 1},
		{up: 640, mismatches: 2, repairs: 1},
		{up: 0, repairs: 1},
	} {
		up, covered = step.up, true
		for range step.mismatches {
			m.SPChecksumMismatch()
		}
		for range step.repairs {
			m.SPRepaired()
		}
		fams = scrape(t, h)
		if got := metricValue(fams, "cfindexd_silentpay_indexed_height"); got != float64(step.up) {
			t.Errorf("cfindexd_silentpay_indexed_height = %v, want %d", got, step.up)
		}
	}
	wantSamples(t, scrape(t, h), []metricSample{
		{name: "cfindexd_silentpay_checksum_mismatches_total", want: 2},
		{name: "cfindexd_silentpay_repairs_total", want: 2},
	})
}
