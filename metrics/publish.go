package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cfindexd/cfindexd/publish"
)

var _ publish.Observer = (*Metrics)(nil)

// publishMetrics are the metrics of the bucket publisher.
type publishMetrics struct {
	objects prometheus.Counter
	bytes   prometheus.Counter
	kept    prometheus.Counter
	height  prometheus.Gauge
	errors  prometheus.Counter
}

// WatchPublish registers the publisher's metrics; call it once, when
// publishing is on.
func (m *Metrics) WatchPublish() {
	p := &publishMetrics{
		objects: prometheus.NewCounter(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "publish_objects_uploaded_total",
			Help: "Objects put into the bucket by the publisher."}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "publish_bytes_uploaded_total",
			Help: "Bytes of the objects put into the bucket by the publisher."}),
		kept: prometheus.NewCounter(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "publish_objects_kept_total",
			Help: "Objects the publisher found in the bucket with their SHA-256 and did not put again."}),
		height: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: "publish_height",
			Help: "End height of the newest range the bucket's manifest lists (0 until the first)."}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: metricsNamespace, Name: "publish_errors_total",
			Help: "Publish rounds that failed (retried, except a conflict with the store, which stops cfindexd)."}),
	}
	m.reg.MustRegister(p.objects, p.bytes, p.kept, p.height, p.errors)
	m.publish.Store(p)
}

// PublishUploaded implements publish.Observer.
func (m *Metrics) PublishUploaded(n int) {
	if p := m.publish.Load(); p != nil {
		p.objects.Inc()
		p.bytes.Add(float64(n))
	}
}

// PublishKept implements publish.Observer.
func (m *Metrics) PublishKept() {
	if p := m.publish.Load(); p != nil {
		p.kept.Inc()
	}
}

// PublishedHeight implements publish.Observer.
func (m *Metrics) PublishedHeight(end uint32) {
	if p := m.publish.Load(); p != nil {
		p.height.Set(float64(end))
	}
}

// PublishFailed implements publish.Observer.
func (m *Metrics) PublishFailed() {
	if p := m.publish.Load(); p != nil {
		p.errors.Inc()
	}
}
