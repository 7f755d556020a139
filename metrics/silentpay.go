package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cfindexd/cfindexd/indexer"
)

var _ indexer.SPObserver = (*Metrics)(nil)

// WatchSilentPayments exports indexedUpTo, called at every scrape, as
// cfindexd_silentpay_indexed_height: the highest height the silent-payment
// index covers, left out while it covers none (or is off). Call it once.
func (m *Metrics) WatchSilentPayments(indexedUpTo func() (uint32, bool)) {
	m.reg.MustRegister(newOptionalGauge(prometheus.BuildFQName(metricsNamespace, "", "silentpay_indexed_height"),
		"Highest height the silent-payment index covers (absent while it covers none).",
		func() (float64, bool) {
			h, ok := indexedUpTo()
			return float64(h), ok
		}))
}

// SPChecksumMismatch counts a damaged height of the silent-payment index.
func (m *Metrics) SPChecksumMismatch() { m.sp.mismatches.Inc() }

// SPRepaired counts a rewind below a damaged height.
func (m *Metrics) SPRepaired() { m.sp.repairs.Inc() }
