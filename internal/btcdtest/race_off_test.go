//go:build !race

package btcdtest

// raceEnabled: the race detector slows signing several-fold, so timing
// requirements are not checked under it.
const raceEnabled = false
