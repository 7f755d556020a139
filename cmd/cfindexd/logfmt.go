package main

import (
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"
)

// logTimeFormat is the timestamp of every log line: RFC 3339 with
// milliseconds, so lines within one second keep their order and spacing.
const logTimeFormat = "2006-01-02T15:04:05.000Z07:00"

// consoleTimeFormat is the time column of the console format.
const consoleTimeFormat = "15:04:05.000"

// newLogger builds the process logger: console on a terminal, JSON
// otherwise, unless logformat says which. Timestamps come from a hook of
// this logger, not from zerolog's package-level TimeFieldFormat, which
// cfindexd leaves alone (no package-level mutable state); durations are
// logged as strings with units (logDur), not as zerolog's unit-less
// numbers.
func newLogger(cfg Config, w io.Writer) zerolog.Logger {
	level, err := zerolog.ParseLevel(cfg.LogLevel)
	if err != nil {
		level = zerolog.InfoLevel
	}
	format := cfg.LogFormat
	if format == "auto" {
		format = "json"
		if f, ok := w.(*os.File); ok && isTerminal(f) {
			format = "console"
		}
	}
	if format == "console" {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: consoleTimeFormat}
	}
	return zerolog.New(w).Level(level).Hook(timestampHook{now: time.Now})
}

// timestampHook adds the time field, with milliseconds, to every event.
type timestampHook struct{ now func() time.Time }

// Run implements zerolog.Hook.
func (h timestampHook) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	e.Str(zerolog.TimestampFieldName, h.now().Format(logTimeFormat))
}

// logDur renders a duration for a log field: rounded to the millisecond
// (to the second above a minute) with its unit, e.g. "850ms", "1m30s".
func logDur(d time.Duration) string {
	if d >= time.Minute || d <= -time.Minute {
		return d.Round(time.Second).String()
	}
	return d.Round(time.Millisecond).String()
}

// isTerminal reports whether f is a character device (a TTY).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
