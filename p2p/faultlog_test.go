package p2p

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"
)

// logBuffer collects JSON log lines from any goroutine.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines decodes every line logged so far.
func (b *logBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// find returns the first line with message msg.
func (b *logBuffer) find(t *testing.T, msg string) (map[string]any, bool) {
	for _, m := range b.lines(t) {
		if m["message"] == msg {
			return m, true
		}
	}
	return nil, false
}

// A request that fails on our side keeps the peer and is logged at warn,
// except when the store is corrupt: the operator has to act then, so it
// is an error line (carrying the store's hint to reindex).
func TestStoreCorruptionLoggedAtError(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		level string
	}{
		{"corrupt store", fmt.Errorf("filter hash at 12: %w: page 7 unreadable; run `cfindexd --reindex` or delete it", ErrCorrupt), "error"},
		{"other fault", errors.New("read transaction: disk busy"), "warn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			view := newFakeView(50, 31)
			view.readErr = tc.err
			var logs logBuffer
			cfg := testConfig(view)
			cfg.Log = zerolog.New(&logs)
			srv := startServer(t, cfg)
			c, _ := connect(t, srv.addr)
			c.send(wire.NewMsgGetCFHeaders(wire.GCSFilterRegular, 0, &view.at(20).hash))
			c.sync() // still connected: the peer is kept
			var line map[string]any
			waitFor(t, "the failure logged", ioTimeout, func() bool {
				var ok bool
				line, ok = logs.find(t, "request failed on our side; peer kept")
				return ok
			})
			if line["level"] != tc.level || line["cmd"] != wire.CmdGetCFHeaders || !strings.Contains(fmt.Sprint(line["error"]), tc.err.Error()) {
				t.Errorf("logged %v, want level %s with the error", line, tc.level)
			}
		})
	}
}

// flakyListener fails its first Accept with a transient error.
type flakyListener struct {
	net.Listener
	once sync.Once
}

func (l *flakyListener) Accept() (net.Conn, error) {
	var failed bool
	l.once.Do(func() { failed = true })
	if failed {
		return nil, errors.New("accept4: too many open files")
	}
	return l.Listener.Accept()
}

// A failed accept is retried after a backoff, logged with its unit like
// every other duration.
func TestAcceptFailureLogsBackoffWithUnit(t *testing.T) {
	var logs logBuffer
	cfg := testConfig(newFakeView(3, 32))
	cfg.Log = zerolog.New(&logs)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, &flakyListener{Listener: ln}) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(ioTimeout):
			t.Error("Serve did not return")
		}
	}()
	c, _ := connect(t, ln.Addr().String()) // accepted after the backoff
	c.sync()
	line, ok := logs.find(t, "accept failed")
	if !ok || line["backoff"] != "5ms" || line["level"] != "warn" {
		t.Fatalf("accept failure logged as %v, want backoff \"5ms\" at warn", line)
	}
}
