//go:build !race

package silentpay

// raceEnabled: the race detector's instrumentation allocates on its own,
// so allocation counts are not checked under it.
const raceEnabled = false
