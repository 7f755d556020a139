//go:build race

package gcs

// raceEnabled: allocation counts are not meaningful under -race.
const raceEnabled = true
