package rest

// Node reachability as the daemon sees it, kept beside the metrics so that
// health, readiness and status read one value. The daemon sets it while it
// waits for the node, when a probe of a running node fails or succeeds,
// and when the node refuses cfindexd's configuration.

// Node reachability states, as NodeUp reports them.
const (
	nodeUnknown int32 = iota // never set: the daemon has not asked yet
	nodeDown                 // the last contact failed
	nodeUp                   // the last contact succeeded
)

// SetNodeUp records whether the node answered the daemon's last contact.
func (m *Metrics) SetNodeUp(up bool) {
	if up {
		m.nodeState.Store(nodeUp)
		return
	}
	m.nodeState.Store(nodeDown)
}

// NodeUp reports whether the node answered the daemon's last contact;
// known is false until the daemon has reported either.
func (m *Metrics) NodeUp() (up, known bool) {
	switch m.nodeState.Load() {
	case nodeUp:
		return true, true
	case nodeDown:
		return false, true
	}
	return false, false
}
