package bitcoind

// Test hooks for the external package bitcoind_test.

// StartCutProxy is startCutProxy for external tests.
var StartCutProxy = startCutProxy

// P2PStats reports how many runs src fetched over P2P and how many
// connections it dialled; zero for sources without a P2P path.
func P2PStats(src BlockSource) (served, dials int64) {
	if s, ok := src.(*txIndexSource); ok && s.p2p != nil {
		return s.p2p.served.Load(), s.p2p.dials.Load()
	}
	return 0, 0
}
