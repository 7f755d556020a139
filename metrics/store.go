package metrics

import "github.com/prometheus/client_golang/prometheus"

// checkedMetrics count the checked values of one kept structure (the
// store, the silent-payment index) that fail their checksum, and what was
// rebuilt from the node: <prefix>_checksum_mismatches_total and
// <prefix>_repairs_total.
type checkedMetrics struct {
	mismatches prometheus.Counter
	repairs    prometheus.Counter
}

func newCheckedMetrics(reg *prometheus.Registry, prefix, mismatchesHelp, repairsHelp string) checkedMetrics {
	m := checkedMetrics{
		mismatches: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: prefix + "_checksum_mismatches_total", Help: mismatchesHelp,
		}),
		repairs: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: metricsNamespace, Name: prefix + "_repairs_total", Help: repairsHelp,
		}),
	}
	reg.MustRegister(m.mismatches, m.repairs)
	return m
}

// StoreChecksumMismatch counts a stored value found failing its checksum.
func (m *Metrics) StoreChecksumMismatch() { m.checked.mismatches.Inc() }

// StoreRepaired counts a height rewritten from the node.
func (m *Metrics) StoreRepaired() { m.checked.repairs.Inc() }
