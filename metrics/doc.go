// Package metrics owns cfindexd's Prometheus metrics. Metrics implements
// the observer interfaces the other packages declare for what they report
// (indexer.Observer, p2p.Metrics, p2p.BatchMetrics, bip37.Metrics and
// httpapi.Metrics), so none of them imports Prometheus, and its Handler
// is what httpapi serves at /metrics.
//
// The registry is private (never Prometheus' global one), with the Go
// runtime (go_*) and process (process_*) collectors; every cfindexd series
// is prefixed cfindexd_. Names and labels are what dashboards and alerts
// rely on: change them only on purpose.
//
// Every counter is exported from the start at 0, and so are the label
// values the code lists in advance (error kinds, disconnect causes,
// commands sent, refusal reasons, prevout sources, each HTTP route at the
// status it answers when nothing goes wrong), so a rate() or an alert
// works before the first event. A series that can never move is not
// pre-created. Label values are fixed names, never raw input (an HTTP
// route is its label, not its path), so the series count stays bounded
// whatever clients send.
//
// Gauges whose value is not known yet (the node's tip age before the node
// was seen, the indexed tip's block time on an empty store, the mempool
// mirror's size without a mirror) are left out of the scrape rather than
// exported as a misleading 0 (optionalgauge.go). The store's size and the
// indexed tip are refreshed by the HTTP server just before each scrape;
// index_rate_blocks_per_second is measured over a sliding window at scrape
// time, so it falls to 0 when indexing stalls (rate.go).
//
// All methods are safe for concurrent use and cheap: they are called on
// the indexer's, the P2P server's and the HTTP server's hot paths.
package metrics
