package metrics

import "github.com/prometheus/client_golang/prometheus"

// optionalGauge is a gauge read at scrape time that is left out of the
// scrape while its value is unknown (a node not yet seen, an empty index),
// rather than exported as a misleading 0.
type optionalGauge struct {
	desc  *prometheus.Desc
	value func() (float64, bool)
}

func newOptionalGauge(name, help string, value func() (float64, bool)) *optionalGauge {
	return &optionalGauge{desc: prometheus.NewDesc(name, help, nil, nil), value: value}
}

// Describe implements prometheus.Collector.
func (g *optionalGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect implements prometheus.Collector.
func (g *optionalGauge) Collect(ch chan<- prometheus.Metric) {
	if v, ok := g.value(); ok {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v)
	}
}
