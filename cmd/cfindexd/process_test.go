package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/daemontest"
	"github.com/cfindexd/cfindexd/internal/testtime"
)

// daemonBinary is the cfindexd binary built once for the process tests.
var daemonBinary string

func TestMain(m *testing.M) { daemontest.Main(m, &daemonBinary) }

// daemonProc is a cfindexd subprocess whose JSON log lines the test reads.
type daemonProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	log  *daemontest.Log
	done chan struct{} // closed when the daemon has ended and its log is read
	err  error
	// cancel ends an in-process daemon (startInProcess); nil for a
	// process.
	cancel context.CancelFunc
}

// startDaemon runs cfindexd with JSON logs; the process is killed at the end
// of the test if it still runs.
func startDaemon(t *testing.T, args ...string) *daemonProc {
	t.Helper()
	return startDaemonEnv(t, nil, args...)
}

// startDaemonEnv is startDaemon with env added to the environment.
func startDaemonEnv(t *testing.T, env []string, args ...string) *daemonProc {
	t.Helper()
	cmd := exec.Command(daemonBinary, append([]string{"--logformat=json", "--loglevel=debug"}, args...)...)
	cmd.Env = append(daemontest.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	d := &daemonProc{t: t, cmd: cmd, log: daemontest.NewLog(), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		d.log.Collect(stderr)
		d.err = cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			_ = cmd.Process.Kill()
			<-d.done
		}
		d.checkNoDoubledPrefix()
		if t.Failed() {
			d.dump()
		}
	})
	return d
}

// checkNoDoubledPrefix fails the test for an error that repeats its own
// context ("open store X: open store X: ...", "getbestblockhash:
// getbestblockhash: ..."): each wrap must add something.
func (d *daemonProc) checkNoDoubledPrefix() {
	for _, l := range d.log.Lines() {
		text := l
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			text, _ = m["error"].(string)
		}
		parts := strings.Split(text, ": ")
		for i := 1; i < len(parts); i++ {
			if parts[i] != "" && parts[i] == parts[i-1] {
				d.t.Errorf("doubled prefix %q in %s", parts[i], l)
				break
			}
		}
	}
}

func (d *daemonProc) dump() {
	for _, l := range d.log.Tail(40) {
		d.t.Log("cfindexd: " + l)
	}
}

// waitLog waits until a log line satisfies pred and returns it decoded.
// Every call looks at every line from the first.
func (d *daemonProc) waitLog(limit time.Duration, pred func(map[string]any) bool) map[string]any {
	d.t.Helper()
	return d.waitLogN(limit, 1, pred)
}

// waitLogN waits until n log lines satisfy pred and returns the n-th.
func (d *daemonProc) waitLogN(limit time.Duration, n int, pred func(map[string]any) bool) map[string]any {
	d.t.Helper()
	limit = testtime.Scale(limit)
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	seen := 0
	for {
		lines, next := d.log.Since(seen)
		seen += len(lines)
		for _, l := range lines {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && pred(m) {
				if n--; n == 0 {
					return m
				}
			}
		}
		select {
		case <-next:
		case <-d.done:
			if more, _ := d.log.Since(seen); len(more) == 0 {
				d.t.Fatalf("cfindexd exited (%v) before the awaited log line", d.err)
			}
		case <-deadline.C:
			d.t.Fatalf("no awaited log line within %s", limit)
		}
	}
}

// kill9 kills the process with SIGKILL and waits for it.
func (d *daemonProc) kill9() {
	d.t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		d.t.Fatal(err)
	}
	<-d.done
}

// terminate sends SIGTERM and returns the exit code and how long the exit
// took.
func (d *daemonProc) terminate(limit time.Duration) (int, time.Duration) {
	d.t.Helper()
	limit = testtime.Scale(limit)
	start := time.Now()
	if d.cmd == nil {
		d.cancel()
	} else if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		d.t.Fatal(err)
	}
	select {
	case <-d.done:
	case <-time.After(limit):
		d.t.Fatalf("cfindexd did not exit within %s of SIGTERM", limit)
	}
	return exitCode(d.err), time.Since(start)
}

// wait waits for the process to exit by itself and returns its exit code and
// the last line it wrote.
func (d *daemonProc) wait(limit time.Duration) (int, string) {
	d.t.Helper()
	limit = testtime.Scale(limit)
	select {
	case <-d.done:
	case <-time.After(limit):
		d.t.Fatalf("cfindexd still runs after %s", limit)
	}
	last := ""
	if l := d.log.Tail(1); len(l) > 0 {
		last = l[0]
	}
	return exitCode(d.err), last
}

func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	default:
		return -1
	}
}

// msgIs matches log lines by message.
func msgIs(msg string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["message"] == msg }
}

// heightAtLeast matches progress or per-block lines at or above h.
func heightAtLeast(h float64) func(map[string]any) bool {
	return func(m map[string]any) bool {
		v, ok := m["height"].(float64)
		return ok && v >= h && (m["message"] == "catching up" || m["message"] == "caught up" || m["message"] == "indexed block")
	}
}

func TestBadConfigExitsNonZeroWithOneLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--chain=bitcoincash"}, 2, "unknown chain"},
		{[]string{"--workers=-1"}, 2, "workers"},
		{[]string{"--nosuchkey=1"}, 2, "nosuchkey"},
		{[]string{"--s3bucket=b"}, 2, "s3bucket is set but s3endpoint is not"},
		{[]string{"--s3prefix=main"}, 2, "s3prefix is set but s3bucket is not"},
	} {
		cmd := exec.Command(daemonBinary, tc.args...)
		cmd.Env = daemontest.Environ()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		if got := exitCode(err); got != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.args, got, tc.code)
		}
		out := stderr.String()
		if strings.Count(out, "\n") != 1 || !strings.Contains(out, tc.want) {
			t.Errorf("%v: stderr %q: want one line naming %q", tc.args, out, tc.want)
		}
	}
}
