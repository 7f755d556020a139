package prevouts

// Test hooks for the external package prevouts_test.

// StartCutProxy is startCutProxy for external tests.
var StartCutProxy = startCutProxy

// P2PStats reports how many runs src fetched over P2P and how many
// connections it dialled; zero for sources without a P2P path.
func P2PStats(src BlockSource) (served, dials int64) {
	if s, ok := src.(*txIndexSource); ok && s.p2p != nil {
		return s.p2p.Stats().Served, s.p2p.Stats().Dials
	}
	return 0, 0
}
