package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/testtime"
)

// syncBuffer is a bytes.Buffer safe for the demo's goroutine and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestDemoRunsAndCleansUp runs the README's run command (its main logic)
// start to finish on btcd, which needs only Go, and on bitcoind too where
// one is on PATH: node, chain with transactions, cfindexd, neutrino synced
// from cfindexd alone, the demo payment found by a rescan, a report saying
// so, and nothing left behind: no listener, no state directory.
func TestDemoRunsAndCleansUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node, cfindexd and neutrino")
	}
	kinds := []string{nodeBtcd}
	if _, err := exec.LookPath("bitcoind"); err == nil {
		kinds = append(kinds, nodeBitcoind)
	}
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) { testDemoRun(t, kind) })
	}
}

func testDemoRun(t *testing.T, kind string) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(3*time.Minute))
	defer cancel()
	state := filepath.Join(t.TempDir(), "state")
	var out syncBuffer
	const blocks = 150
	rep, err := runDemo(ctx, demoConfig{StateDir: state, Node: kind, Blocks: blocks, Out: &out})
	t.Log("demo output:\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}

	wantTip := int32(maturityBlocks + blocks + demoConfirmations)
	if rep.NodeHeight != wantTip || rep.IndexedHeight != wantTip || rep.Light.Height != wantTip {
		t.Errorf("tips: node %d, cfindexd %d, neutrino %d; want %d", rep.NodeHeight, rep.IndexedHeight, rep.Light.Height, wantTip)
	}
	if rep.IndexedHash != rep.NodeHash || rep.Light.Hash != rep.NodeHash {
		t.Errorf("tip hashes differ: node %s, cfindexd %s, neutrino %s", rep.NodeHash, rep.IndexedHash, rep.Light.Hash)
	}
	if rep.Light.FilterHeader != rep.IndexedFilterHeader {
		t.Errorf("filter header: neutrino %s, cfindexd %s", rep.Light.FilterHeader, rep.IndexedFilterHeader)
	}
	if want := wantTip - demoConfirmations + 1; rep.Payment.Height != want {
		t.Errorf("demo payment at %d, want %d", rep.Payment.Height, want)
	}
	if len(rep.Matches) != 1 || rep.Matches[0].TxID != rep.Payment.TxID || rep.Matches[0].Height != rep.Payment.Height {
		t.Errorf("rescan matches %v, want %s at %d", rep.Matches, rep.Payment.TxID, rep.Payment.Height)
	}
	for _, want := range []string{
		fmt.Sprintf("node tip            %6d  %s", wantTip, rep.NodeHash),
		fmt.Sprintf("cfindexd tip        %6d  %s", wantTip, rep.NodeHash),
		fmt.Sprintf("neutrino headers    %6d  %s", wantTip, rep.NodeHash),
		fmt.Sprintf("filter header       %6d  %s", wantTip, rep.IndexedFilterHeader),
		fmt.Sprintf("matched transaction %s in block %d", rep.Payment.TxID, rep.Payment.Height),
		"neutrino peers      1",
		fmt.Sprintf("  mined %d of %d blocks", wantTip, wantTip), // progress during the mining step
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}

	// Cleaned up: cfindexd's listeners are closed and the state is gone.
	for _, addr := range []string{rep.P2PAddr, rep.HTTPAddr} {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after the demo", addr)
		}
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state directory left behind: %v", err)
	}
}

// startKeptDemo runs the demo with -keep on blocks blocks, its state in
// state and its output in out, until ctx ends, and returns its report
// once it is ready and the channel its result arrives on. The demo ending
// first, ctx ending or wait (nil: none) firing first fails t.
func startKeptDemo(ctx context.Context, t *testing.T, state string, blocks int, out *syncBuffer, wait <-chan time.Time) (*report, <-chan error) {
	t.Helper()
	ready := make(chan *report, 1)
	done := make(chan error, 1)
	go func() {
		_, err := runDemo(ctx, demoConfig{
			StateDir: state, Node: nodeBtcd, Blocks: blocks, Keep: true, Out: out,
			onReady: func(r *report) { ready <- r },
		})
		done <- err
	}()
	select {
	case rep := <-ready:
		return rep, done
	case err := <-done:
		t.Fatalf("demo ended before its report: %v\n%s", err, out.String())
	case <-ctx.Done():
		t.Fatalf("no demo report:\n%s", out.String())
	case <-wait:
		t.Fatalf("no demo report in time:\n%s", out.String())
	}
	return nil, nil
}

// TestStopEndsAKeptDemo runs the demo with -keep, then the README's stop
// command: every process the demo recorded exits and the state directory
// is removed, and the kept demo returns.
func TestStopEndsAKeptDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts btcd, cfindexd and neutrino")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(3*time.Minute))
	defer cancel()
	state := filepath.Join(t.TempDir(), "state")
	var out syncBuffer
	rep, done := startKeptDemo(ctx, t, state, 5, &out, time.After(testtime.Scale(2*time.Minute)))
	t.Log("demo output:\n" + out.String())
	for _, want := range []string{"still running (-keep)", "node RPC", "node P2P            " + rep.NodeP2P, "cfindexd P2P        " + rep.P2PAddr,
		"cfindexd HTTP       http://" + rep.HTTPAddr, "neutrino            in this process, peer " + rep.P2PAddr, rep.MineCommand} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-keep output lacks %q:\n%s", want, out.String())
		}
	}
	// The printed commands work: mining a block moves cfindexd's tip, and
	// the status command reports it.
	if _, err := exec.LookPath("curl"); err == nil {
		if mined, err := exec.CommandContext(ctx, "sh", "-c", rep.MineCommand).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", rep.MineCommand, err, mined)
		}
		statusCmd := strings.Fields(rep.DaemonBin + " status --json --chain=regtest --httplisten=" + rep.HTTPAddr)
		deadline := time.Now().Add(testtime.Scale(30 * time.Second))
		for {
			st, err := exec.CommandContext(ctx, statusCmd[0], statusCmd[1:]...).Output()
			if err == nil && strings.Contains(string(st), fmt.Sprintf(`"indexed_height": %d`, rep.NodeHeight+1)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after the printed mine command, status says %s (%v)", st, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	} else {
		t.Log("curl not installed: the printed mine command is not run")
	}
	recs, err := readPIDFiles(state)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, r := range recs {
		if !r.alive() {
			t.Errorf("%s (pid %d) recorded but not running", r.Name, r.PID)
		}
		names[r.Name] = true
	}
	if !names["btcd"] || !names["cfindexd"] {
		t.Fatalf("pid files %v, want btcd and cfindexd", recs)
	}

	// The printed stop command names this run's -state, and stops it.
	const prefix = "`go run ./scripts/regtest "
	_, printed, _ := strings.Cut(out.String(), "Ctrl-C here, or "+prefix)
	printed, _, _ = strings.Cut(printed, "`")
	if want := "-state " + state + " stop"; printed != want {
		t.Fatalf("printed stop command %q, want %q", prefix+printed, prefix+want)
	}
	var stopOut, stopErr bytes.Buffer
	if code := run(strings.Fields(printed), &stopOut, &stopErr); code != 0 {
		t.Fatalf("stop: exit %d\n%s%s", code, stopOut.String(), stopErr.String())
	}
	t.Log("stop output:\n" + stopOut.String())
	for _, r := range recs {
		if r.alive() {
			t.Errorf("%s (pid %d) still runs after stop", r.Name, r.PID)
		}
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state directory left behind: %v", err)
	}
	select {
	case <-done: // it notices cfindexd is gone; any error is fine here
	case <-time.After(testtime.Scale(30 * time.Second)):
		t.Fatal("the kept demo did not return after stop")
	}
}

// TestCommandLine pins the command's exit codes and its refusal to wipe a
// directory it did not create.
func TestCommandLine(t *testing.T) {
	foreign := t.TempDir()
	if err := os.WriteFile(filepath.Join(foreign, "precious"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "none")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-state", missing, "stop"}, 0, "nothing to stop"},
		{[]string{"-state", foreign, "stop"}, 1, "not a demo state directory"},
		{[]string{"-state", foreign, "-node", "btcd"}, 1, "not empty and not a demo state directory"},
		{[]string{"-node", "geth"}, 1, "-node"},
		{[]string{"-blocks", "0", "-state", missing}, 1, "-blocks"},
		{[]string{"start"}, 2, "unknown command"},
		{[]string{"stop", "now"}, 2, "too many arguments"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, output %q; want exit %d naming %q", tc.args, code, stdout.String()+stderr.String(), tc.code, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(foreign, "precious")); err != nil {
		t.Errorf("the foreign directory was touched: %v", err)
	}
}

// cancelOn cancels a context once the demo prints a line starting with
// prefix, and records the processes the demo had started by then.
type cancelOn struct {
	syncBuffer
	prefix string
	state  string
	cancel context.CancelFunc
	seen   []pidRecord
}

func (c *cancelOn) Write(p []byte) (int, error) {
	if strings.HasPrefix(string(p), c.prefix) && c.seen == nil {
		c.seen, _ = readPIDFiles(c.state)
		c.cancel()
	}
	return c.syncBuffer.Write(p)
}

// TestInterruptStopsEverything interrupts the demo (what Ctrl-C does) while
// it mines: it returns at once saying so, and the node it started is gone.
func TestInterruptStopsEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("starts btcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(2*time.Minute))
	defer cancel()
	state := filepath.Join(t.TempDir(), "state")
	out := &cancelOn{prefix: "- mine", state: state, cancel: cancel}
	_, err := runDemo(ctx, demoConfig{StateDir: state, Node: nodeBtcd, Blocks: 100_000, Out: out})
	if err == nil || !strings.Contains(err.Error(), "interrupted while mine") {
		t.Fatalf("runDemo = %v, want an interruption while mining", err)
	}
	if len(out.seen) == 0 {
		t.Fatal("no process was recorded before the interruption")
	}
	if want := "(`go run ./scripts/regtest -state " + state + " stop` removes them)"; !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
	for _, r := range out.seen {
		if r.alive() {
			t.Errorf("%s (pid %d) still runs after the interruption", r.Name, r.PID)
		}
	}
	if live, _ := liveProcesses(state); len(live) > 0 {
		t.Errorf("pid files of live processes left: %v", live)
	}
}

// The mining step reports at most every two seconds, and always its last
// block.
func TestMiningProgressLines(t *testing.T) {
	var out bytes.Buffer
	at := time.Unix(1000, 0)
	now := func() time.Time { return at }
	progress := miningProgress(&out, 300, now)
	for mined := 100; mined <= 300; mined += 100 {
		at = at.Add(1500 * time.Millisecond)
		progress(mined)
	}
	want := "  mined 200 of 300 blocks (67 blocks/s, 3s)\n  mined 300 of 300 blocks (67 blocks/s, 4.5s)\n"
	if out.String() != want {
		t.Errorf("progress lines %q, want %q", out.String(), want)
	}
}

// The stop command the demo prints names its -state unless it is the
// default, quoted for a shell.
func TestStopCommandNamesTheState(t *testing.T) {
	for dir, want := range map[string]string{
		defaultStateDir(): "go run ./scripts/regtest stop",
		"/tmp/demo-1":     "go run ./scripts/regtest -state /tmp/demo-1 stop",
		"/tmp/my demo":    "go run ./scripts/regtest -state '/tmp/my demo' stop",
		"/tmp/it's":       `go run ./scripts/regtest -state '/tmp/it'\''s' stop`,
	} {
		if got := stopCommand(dir); got != want {
			t.Errorf("stopCommand(%q) = %q, want %q", dir, got, want)
		}
	}
}

// Before building btcd the demo says so, naming the version and where it
// goes; once built, it says nothing.
func TestBtcdBuildNote(t *testing.T) {
	path := filepath.Join(t.TempDir(), "btcd-"+btcdtest.BtcdVersion)
	if got, want := btcdBuildNote(path), "  building btcd "+btcdtest.BtcdVersion+" from the module cache into "+path+" (first run only)\n"; got != want {
		t.Errorf("note %q, want %q", got, want)
	}
	if err := os.WriteFile(path, nil, 0o700); err != nil {
		t.Fatal(err)
	}
	if got := btcdBuildNote(path); got != "" {
		t.Errorf("note %q once built, want none", got)
	}
}
