package p2p

import (
	"fmt"
	"time"
)

// timeAfter is time.After, named so tests read as deadlines.
func timeAfter(d time.Duration) <-chan time.Time { return time.After(d) }

// fmtSscan parses a decimal port.
func fmtSscan(s string, p *uint16) (int, error) { return fmt.Sscan(s, p) }
