package metrics

import "github.com/prometheus/client_golang/prometheus"

// checkedMetrics count the stored values that fail their checksum and the
// heights rewritten from the node.
type checkedMetrics struct {
	mismatches prometheus.Counter
	repairs    prometheus.Counter
}

func newCheckedMetrics(reg *prometheus.Registry) checkedMetrics {
	m := checkedMetrics{
		mismatches: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "store_checksum_mismatches_total",
			Help: "Stored filters, filter hashes, filter headers or cfilter checksums found failing their checksum (each counted once until repaired); none of them is served.",
		}),
		repairs: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: "store_repairs_total",
			Help: "Heights whose filter was rebuilt from the node and rewritten after a checksum mismatch.",
		}),
	}
	reg.MustRegister(m.mismatches, m.repairs)
	return m
}

// StoreChecksumMismatch counts a stored value found failing its checksum.
func (m *Metrics) StoreChecksumMismatch() { m.checked.mismatches.Inc() }

// StoreRepaired counts a height rewritten from the node.
func (m *Metrics) StoreRepaired() { m.checked.repairs.Inc() }
