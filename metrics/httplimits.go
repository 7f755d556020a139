package metrics

import "github.com/prometheus/client_golang/prometheus"

// limitMetrics are the metrics of the HTTP server's connection and bulk
// limits and of handler panics.
type limitMetrics struct {
	connsOpen    prometheus.Gauge
	connsRefused *prometheus.CounterVec
	connsEvicted *prometheus.CounterVec
	bulkInFlight prometheus.Gauge
	bulkRefused  *prometheus.CounterVec
	bulkSlowCut  prometheus.Counter
	panics       prometheus.Counter
}

func newLimitMetrics(reg *prometheus.Registry) *limitMetrics {
	m := &limitMetrics{
		connsOpen: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: "http_connections_open",
			Help: "HTTP connections open (admitted, not yet closed)."}),
		connsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "http_connections_refused_total",
			Help: "HTTP connections refused at accept (503 and close) because every connection was busy, by the cap reached (total, per_address)."}, []string{"cap"}),
		connsEvicted: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "http_connections_evicted_total",
			Help: "Idle or not-yet-requesting HTTP connections closed to admit a new one, by the cap reached (total, per_address)."}, []string{"cap"}),
		bulkInFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: "http_bulk_in_flight",
			Help: "Bulk downloads being served."}),
		bulkRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "http_bulk_refused_total",
			Help: "Bulk downloads answered 503 for want of a slot, by the cap reached (total, per_address)."}, []string{"cap"}),
		bulkSlowCut: prometheus.NewCounter(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "http_bulk_slow_cut_total",
			Help: "Bulk downloads cut off because the client read slower than the minimum rate."}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "http_handler_panics_total",
			Help: "HTTP handlers that panicked (answered 500 or cut off; logged at error with the stack)."}),
	}
	reg.MustRegister(m.connsOpen, m.connsRefused, m.connsEvicted, m.bulkInFlight, m.bulkRefused, m.bulkSlowCut, m.panics)
	return m
}

// HTTPConnsOpen implements httpapi.Observer.
func (m *Metrics) HTTPConnsOpen(n int) { m.limits.connsOpen.Set(float64(n)) }

// HTTPConnRefused implements httpapi.Observer.
func (m *Metrics) HTTPConnRefused(cap string) { m.limits.connsRefused.WithLabelValues(cap).Inc() }

// HTTPConnEvicted implements httpapi.Observer.
func (m *Metrics) HTTPConnEvicted(cap string) { m.limits.connsEvicted.WithLabelValues(cap).Inc() }

// HTTPBulkInFlight implements httpapi.Observer.
func (m *Metrics) HTTPBulkInFlight(n int) { m.limits.bulkInFlight.Set(float64(n)) }

// HTTPBulkRefused implements httpapi.Observer.
func (m *Metrics) HTTPBulkRefused(cap string) { m.limits.bulkRefused.WithLabelValues(cap).Inc() }

// HTTPBulkSlowCut implements httpapi.Observer.
func (m *Metrics) HTTPBulkSlowCut() { m.limits.bulkSlowCut.Inc() }

// HTTPHandlerPanicked implements httpapi.Observer.
func (m *Metrics) HTTPHandlerPanicked() { m.limits.panics.Inc() }
