package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cfindexd/cfindexd/indexer"
)

var _ indexer.SPObserver = (*Metrics)(nil)

// spMetrics are the silent-payment index's: how far it reaches (read from
// the index at scrape time, since the follower and the backfill both move
// it) and its repairs.
type spMetrics struct {
	mismatches prometheus.Counter
	repairs    prometheus.Counter
}

func newSPMetrics(reg *prometheus.Registry) spMetrics {
	m := spMetrics{
		mismatches: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "silentpay_checksum_mismatches_total",
			Help: "Heights of the silent-payment index found holding a value that fails its checksum (each counted once until rebuilt); none of them is served.",
		}),
		repairs: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "silentpay_repairs_total",
			Help: "Rewinds of the silent-payment index below a damaged height, whose blocks the background build then rebuilds from the node.",
		}),
	}
	reg.MustRegister(m.mismatches, m.repairs)
	return m
}

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
