package rest

// Node reachability as the daemon sees it, kept beside the metrics so that
// readiness, status and metrics read one value. The daemon reports it
// while it waits for the node, when a probe of a running node fails or
// succeeds, and when the node refuses cfindexd's configuration.
//
// The methods have the signatures of the ones the ops-indexer branch adds
// to metrics.go (where the follower reports each round through
// indexer.Observer and cfindexd_node_up follows them): when both branches
// are merged, that implementation replaces this file.

// reachability is one report of NodeReachable.
type reachability struct{ err error }

// NodeReachable records whether the node answered the last contact (nil)
// or could not be reached or refused cfindexd (the error).
func (m *Metrics) NodeReachable(err error) {
	m.reach.Store(&reachability{err: err})
}

// NodeReachability returns the error of the last contact that failed (nil
// if it succeeded), and false before the first report.
func (m *Metrics) NodeReachability() (error, bool) {
	r := m.reach.Load()
	if r == nil {
		return nil, false
	}
	return r.err, true
}
