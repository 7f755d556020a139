package httpapi

import (
	"errors"
	"net/http"
	"os"
	"time"
)

// minRatePiece is the most a minRateWriter hands to the connection at once,
// so that its deadline is renewed at least every 64 KiB.
const minRatePiece = 64 << 10

// errTooSlow is returned by minRateWriter when a window ended before the
// client took its quota.
var errTooSlow = errors.New("client reads slower than the bulk minimum rate")

// minRateWriter is the body writer of a bulk download. Time is cut into
// windows; each must deliver at least quota bytes to the connection (the
// kernel accepting them), or the write in progress fails at the window's
// end through the connection's write deadline, and so does every later
// one. A window in which the quota was reached ends at the next write,
// which opens a new one. The deadline is never later than hardDeadline
// (BulkWriteTimeout from the start).
//
// Counting per window rather than on average since the start matters: the
// client's and server's socket buffers take megabytes at once, which as an
// average would buy a client that stopped reading many minutes.
type minRateWriter struct {
	w            http.ResponseWriter
	rc           *http.ResponseController
	quota        int64
	window       time.Duration
	hardDeadline time.Time
	now          func() time.Time

	winEnd   time.Time
	winBytes int64
	failed   error
}

func newMinRateWriter(w http.ResponseWriter, rate int, window time.Duration, hard time.Time, now func() time.Time) *minRateWriter {
	quota := int64(rate) * int64(window) / int64(time.Second)
	return &minRateWriter{w: w, rc: http.NewResponseController(w), quota: max(quota, 1), window: window, hardDeadline: hard, now: now}
}

// Write writes p in pieces of at most minRatePiece, each under the current
// window's deadline.
func (m *minRateWriter) Write(p []byte) (int, error) {
	if m.failed != nil {
		return 0, m.failed
	}
	written := 0
	for len(p) > 0 {
		if m.winEnd.IsZero() || m.winBytes >= m.quota {
			m.winEnd, m.winBytes = m.now().Add(m.window), 0
			deadline := m.winEnd
			if deadline.After(m.hardDeadline) {
				deadline = m.hardDeadline
			}
			// A writer without a connection (an in-process recorder)
			// cannot be timed; there is no client to be slow either.
			if err := m.rc.SetWriteDeadline(deadline); err != nil && !errors.Is(err, http.ErrNotSupported) {
				m.failed = err
				return written, err
			}
		}
		n, err := m.w.Write(p[:min(len(p), minRatePiece)])
		written += n
		m.winBytes += int64(n)
		p = p[n:]
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && m.now().Before(m.hardDeadline) {
				err = errTooSlow
			}
			m.failed = err
			return written, err
		}
	}
	return written, nil
}
