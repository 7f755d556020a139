//go:build !race

package wirescan

const raceEnabled = false
