//go:build !race

package p2p

// raceEnabled: under the race detector sync.Pool drops what it is given at
// random and the instrumentation allocates on its own, so allocation
// bounds are not checked under it.
const raceEnabled = false
