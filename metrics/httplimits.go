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
	slowCut      *prometheus.CounterVec
	panics       prometheus.Counter
}

func newLimitMetrics(reg *prometheus.Registry) *limitMetrics {
	m := &limitMetrics{
		connsOpen: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: "http_connections_open",
			Help: "HTTP connections open (admitted, not yet closed)."}),
		connsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "http_connections_refused_total",
			Help: "HTTP connections refused at accept (503 and close) because no open connection could be closed to admit them, by the cap reached (total, per_address)."}, []string{"cap"}),
		connsEvicted: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "http_connections_evicted_total",
			Help: "HTTP connections (idle, or busy in the network holding the most) closed to admit a new one, by the cap reached (total, per_address)."}, []string{"cap"}),
		bulkInFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: "http_bulk_in_flight",
			Help: "Bulk downloads being served."}),
		bulkRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "http_bulk_refused_total",
			Help: "Bulk downloads answered 503 for want of a slot, by the cap reached (total, per_address)."}, []string{"cap"}),
		slowCut: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "http_slow_cut_total",
			Help: "HTTP answers cut off, with their connection, because the client read slower than the minimum rate, by kind (bulk: a bulk download; answer: any other)."}, []string{"kind"}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "http_handler_panics_total",
			Help: "HTTP handlers that panicked (answered 500 or cut off; logged at error with the stack)."}),
	}
	reg.MustRegister(m.connsOpen, m.connsRefused, m.connsEvicted, m.bulkInFlight, m.bulkRefused, m.slowCut, m.panics)
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

// HTTPSlowCut implements httpapi.Observer.
func (m *Metrics) HTTPSlowCut(kind string) { m.limits.slowCut.WithLabelValues(kind).Inc() }

// HTTPHandlerPanicked implements httpapi.Observer.
func (m *Metrics) HTTPHandlerPanicked() { m.limits.panics.Inc() }
