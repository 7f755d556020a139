package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	// pidSuffix ends the name of every pid file in the state directory.
	pidSuffix = ".pid"
	// demoPIDName is the pid file of the demo process itself.
	demoPIDName = "demo"
	// stopGrace is how long stop waits after SIGTERM before SIGKILL.
	stopGrace = 20 * time.Second
)

// pidRecord is one pid file: a process the demo started (or the demo
// itself) and the executable it runs, so that stop never signals a
// process that merely reuses the pid.
type pidRecord struct {
	Name string
	PID  int
	Exe  string
}

// writePIDFile records a process in dir as "<pid> <exe>".
func writePIDFile(dir, name string, pid int, exe string) error {
	path := filepath.Join(dir, name+pidSuffix)
	if err := os.WriteFile(path, []byte(fmt.Sprintf("%d %s\n", pid, exe)), 0o600); err != nil {
		return fmt.Errorf("write pid file: %w", err)
	}
	return nil
}

// removePIDFile forgets a process that has exited.
func removePIDFile(dir, name string) {
	_ = os.Remove(filepath.Join(dir, name+pidSuffix))
}

// readPIDFiles lists the pid files in dir; a missing dir has none.
func readPIDFiles(dir string) ([]pidRecord, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*"+pidSuffix))
	if err != nil {
		return nil, err
	}
	var recs []pidRecord
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		pidText, exe, _ := strings.Cut(strings.TrimSpace(string(raw)), " ")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("%s: bad pid %q", p, pidText)
		}
		recs = append(recs, pidRecord{Name: strings.TrimSuffix(filepath.Base(p), pidSuffix), PID: pid, Exe: exe})
	}
	return recs, nil
}

// alive reports whether rec's process still runs the recorded executable.
// Where /proc is missing (not Linux) the executable cannot be checked and
// a live pid is trusted.
func (rec pidRecord) alive() bool {
	proc, err := os.FindProcess(rec.PID)
	if err != nil || proc.Signal(syscall.Signal(0)) != nil {
		return false
	}
	if runtime.GOOS != "linux" || rec.Exe == "" {
		return true
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", rec.PID))
	if err != nil {
		// A zombie or a process of another user: not ours to signal.
		return false
	}
	return strings.TrimSuffix(exe, " (deleted)") == rec.Exe
}

// signal sends sig to rec's process if it is still the recorded one.
func (rec pidRecord) signal(sig os.Signal) {
	if !rec.alive() {
		return
	}
	if proc, err := os.FindProcess(rec.PID); err == nil {
		_ = proc.Signal(sig)
	}
}

// liveProcesses returns the recorded processes of dir that still run.
func liveProcesses(dir string) ([]pidRecord, error) {
	recs, err := readPIDFiles(dir)
	if err != nil {
		return nil, err
	}
	var live []pidRecord
	for _, r := range recs {
		if r.alive() && r.PID != os.Getpid() {
			live = append(live, r)
		}
	}
	return live, nil
}

// stopDemo ends every process a previous run recorded in dir and removes
// dir. The demo process goes first, since it stops its own children
// cleanly; whatever still runs after stopGrace gets SIGKILL.
func stopDemo(dir string, out io.Writer) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(out, "nothing to stop: %s does not exist\n", dir)
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, stateMarker)); err != nil {
		return fmt.Errorf("%s is not a demo state directory; not touching it", dir)
	}
	live, err := liveProcesses(dir)
	if err != nil {
		return err
	}
	for _, r := range live {
		if r.Name == demoPIDName {
			fmt.Fprintf(out, "stopping the demo (pid %d)\n", r.PID)
			r.signal(syscall.SIGTERM)
			waitGone([]pidRecord{r}, stopGrace)
		}
	}
	for _, r := range live {
		if r.Name != demoPIDName && r.alive() {
			fmt.Fprintf(out, "stopping %s (pid %d)\n", r.Name, r.PID)
			r.signal(syscall.SIGTERM)
		}
	}
	if left := waitGone(live, stopGrace); len(left) > 0 {
		for _, r := range left {
			fmt.Fprintf(out, "killing %s (pid %d)\n", r.Name, r.PID)
			r.signal(syscall.SIGKILL)
		}
		if left = waitGone(left, 5*time.Second); len(left) > 0 {
			return fmt.Errorf("%s (pid %d) survived SIGKILL; %s kept", left[0].Name, left[0].PID, dir)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	fmt.Fprintf(out, "stopped; removed %s\n", dir)
	return nil
}

// waitGone waits until none of recs runs or limit passes and returns those
// still running.
func waitGone(recs []pidRecord, limit time.Duration) []pidRecord {
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		var left []pidRecord
		for _, r := range recs {
			if r.alive() {
				left = append(left, r)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		<-tick.C
	}
}
