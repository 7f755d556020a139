// Package daemontest runs the cfindexd program in tests: built once per
// test binary (Main), started with an environment free of the developer's
// CFINDEXD_* settings (Environ), and its log lines collected as it writes
// them so that a test can wait for one (Log). It is shared by the process
// tests of cmd/cfindexd and by cmd/cfscan's tests against a real daemon;
// the regtest demo (scripts/regtest) manages its own child processes and
// does not use it, because it is a program, not a test.
//
// It must not be used outside tests.
package daemontest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cfindexd/cfindexd/internal/daemonenv"
)

// Package is the import path of the daemon Main builds.
const Package = "github.com/cfindexd/cfindexd/cmd/cfindexd"

// Main is a whole TestMain for tests that run the daemon: it builds
// Package into a temporary directory, sets *bin to the binary's path, runs
// the tests, removes the directory and exits with the tests' code. A
// failed build exits with 1 before any test runs.
func Main(m *testing.M, bin *string) {
	dir, err := os.MkdirTemp("", "cfindexd-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*bin = filepath.Join(dir, "cfindexd")
	build := exec.Command("go", "build", "-o", *bin, Package)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build cfindexd:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Environ is this process's environment cleaned by daemonenv.Clean:
// without its CFINDEXD_* variables (a developer's settings, or another
// package's test knobs, which cfindexd would refuse or obey), with
// CFINDEXD_CONFIG empty so that no configuration file is read.
func Environ() []string { return daemonenv.Clean(os.Environ()) }

// Log holds the lines a daemon wrote, as they arrive. It is safe for
// concurrent use: one goroutine runs Collect, tests read and wait.
type Log struct {
	mu    sync.Mutex
	lines []string
	next  chan struct{} // closed and replaced on every new line
}

// NewLog returns an empty Log.
func NewLog() *Log { return &Log{next: make(chan struct{})} }

// Collect appends every line read from r (up to 1 MiB each) until r ends
// or fails.
func (l *Log) Collect(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l.mu.Lock()
		l.lines = append(l.lines, sc.Text())
		close(l.next)
		l.next = make(chan struct{})
		l.mu.Unlock()
	}
}

// Since returns the lines from index from on (shared: do not modify) and a
// channel that is closed when a line is added after them.
func (l *Log) Since(from int) ([]string, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lines[min(from, len(l.lines)):], l.next
}

// Lines returns a copy of every line so far.
func (l *Log) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// Tail returns a copy of the last n lines.
func (l *Log) Tail(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines[max(0, len(l.lines)-n):]...)
}

// Start runs bin with args and Environ's environment, collects its log
// (standard error) into the Log it returns, and stops it when the test
// ends: killed, its log drained, and the last 30 lines logged if the test
// failed, under name.
func Start(t testing.TB, name, bin string, args ...string) *Log {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = Environ()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	log := NewLog()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		log.Collect(stderr)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-logDone
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s log:\n%s", name, strings.Join(log.Tail(30), "\n"))
		}
	})
	return log
}
