package httpapi

import (
	"errors"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// minRatePiece is the most a minRateWriter hands to the connection at once,
// so that its deadline is renewed at least every 64 KiB (or every quota,
// if smaller: a client reading at the rate takes a piece in a window).
const minRatePiece = 64 << 10

// errTooSlow is returned by minRateWriter when a window ended before the
// client took its quota.
var errTooSlow = errors.New("client reads slower than the minimum rate")

// errCut is returned by minRateWriter after cut: a bulk download whose
// slot another client took over.
var errCut = errors.New("response cut off: its bulk slot was taken over")

// minRateWriter is the writer of every response. Time is cut into
// windows; each must deliver at least quota bytes to the connection (the
// kernel accepting them), or the write in progress fails at the window's
// end through the connection's write deadline, and so does every later
// one. A window in which the quota was reached ends at the next write,
// which opens a new one. The deadline is never later than hardDeadline
// (WriteTimeout from the request, BulkWriteTimeout for a bulk download).
// finish gives what net/http still holds buffered when the handler
// returns one more window; so a client that stops reading holds its
// connection about one window after its socket buffers fill, whatever it
// asked, and one that reads steadily at the rate is never cut.
//
// Counting per window rather than on average since the start matters: the
// client's and server's socket buffers take megabytes at once, which as an
// average would buy a client that stopped reading many minutes.
type minRateWriter struct {
	http.ResponseWriter
	rc           *http.ResponseController
	quota        int64
	window       time.Duration
	hardDeadline time.Time
	now          func() time.Time

	winEnd   time.Time
	winBytes int64
	failed   error
	cutOff   atomic.Bool
}

func newMinRateWriter(w http.ResponseWriter, rate int, window time.Duration, hard time.Time, now func() time.Time) *minRateWriter {
	quota := int64(rate) * int64(window) / int64(time.Second)
	return &minRateWriter{ResponseWriter: w, rc: http.NewResponseController(w), quota: max(quota, 1), window: window, hardDeadline: hard, now: now}
}

// setDeadline sets the connection's write deadline to t, at most
// hardDeadline. A writer without a connection (an in-process recorder)
// cannot be timed; there is no client to be slow either.
func (m *minRateWriter) setDeadline(t time.Time) error {
	if t.After(m.hardDeadline) {
		t = m.hardDeadline
	}
	if err := m.rc.SetWriteDeadline(t); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
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
			if err := m.setDeadline(m.winEnd); err != nil {
				m.failed = err
				return written, err
			}
		}
		// After the deadline is set: a cut racing this write either is
		// seen here or moves the deadline after it.
		if m.cutOff.Load() {
			m.failed = errCut
			return written, errCut
		}
		n, err := m.ResponseWriter.Write(p[:min(int64(len(p)), minRatePiece, m.quota)])
		written += n
		m.winBytes += int64(n)
		p = p[n:]
		if err != nil {
			switch {
			case m.cutOff.Load():
				err = errCut
			case errors.Is(err, os.ErrDeadlineExceeded) && m.now().Before(m.hardDeadline):
				err = errTooSlow
			}
			m.failed = err
			return written, err
		}
	}
	return written, nil
}

// finish gives the bytes net/http flushes after the handler returns one
// window (within hardDeadline). serveHTTP calls it as the handler ends.
func (m *minRateWriter) finish() {
	if m.failed == nil && !m.cutOff.Load() {
		_ = m.setDeadline(m.now().Add(m.window))
	}
}

// cut ends the response: every later write fails, and the one in progress
// is interrupted through the connection's write deadline. It may be
// called from any goroutine.
func (m *minRateWriter) cut() {
	m.cutOff.Store(true)
	_ = m.rc.SetWriteDeadline(time.Now())
}

// Unwrap gives http.ResponseController the connection's writer.
func (m *minRateWriter) Unwrap() http.ResponseWriter { return m.ResponseWriter }
