package lightclient

import (
	"strings"
	"sync"

	"github.com/btcsuite/btclog"
	"github.com/lightninglabs/neutrino"
)

// Log collects neutrino's log lines for a test to search or print.
type Log struct {
	mu    sync.Mutex
	lines []string
}

// CaptureLog installs a new Log as neutrino's logger at level and above
// and returns it. neutrino logs through one package-level logger, so only
// one capture per process is meaningful at a time; the logger stays
// installed afterwards, because neutrino's goroutines may outlive Stop and
// swapping the logger under them is a data race.
func CaptureLog(level btclog.Level) *Log {
	l := &Log{}
	logger := btclog.NewBackend(l).Logger("NTRN")
	logger.SetLevel(level)
	neutrino.UseLogger(logger)
	return l
}

// Write implements io.Writer for btclog's backend (one line per call).
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Tail returns the last n lines.
func (l *Log) Tail(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines[max(0, len(l.lines)-n):]...)
}

// Warnings returns the lines logged at warning level or above.
func (l *Log) Warnings() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(line, "[WRN]") || strings.Contains(line, "[ERR]") || strings.Contains(line, "[CRT]") {
			out = append(out, line)
		}
	}
	return out
}
