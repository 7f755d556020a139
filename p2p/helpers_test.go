package p2p

import "time"

// timeAfter is time.After, named so tests read as deadlines.
func timeAfter(d time.Duration) <-chan time.Time { return time.After(d) }
