package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// child is a process the demo started (cfindexd or bitcoind), its output
// in a log file in the state directory and its pid in a pid file there.
type child struct {
	name     string
	stateDir string
	cmd      *exec.Cmd
	logPath  string
	done     chan struct{} // closed once the process has exited
	err      error         // its exit status, valid after done
}

// startChild starts bin with args, stdout and stderr appended to
// <stateDir>/<name>.log, and records it in <stateDir>/<name>.pid. A nil env
// keeps the demo's environment.
func startChild(stateDir, name, bin string, env []string, args ...string) (*child, error) {
	logPath := filepath.Join(stateDir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = env
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, stateDir: stateDir, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	exe, err := filepath.Abs(bin)
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err == nil {
		err = writePIDFile(stateDir, name, cmd.Process.Pid, exe)
	}
	if err != nil {
		_ = c.stop(0)
		return nil, err
	}
	return c, nil
}

// exited reports whether the process has ended, and why.
func (c *child) exited() (bool, error) {
	select {
	case <-c.done:
		if c.err == nil {
			return true, fmt.Errorf("%s exited (see %s)", c.name, c.logPath)
		}
		return true, fmt.Errorf("%s exited: %w (see %s)", c.name, c.err, c.logPath)
	default:
		return false, nil
	}
}

// stop ends the process by pid: SIGTERM, then SIGKILL after grace. It
// waits for the exit and removes the pid file. Stopping twice is fine.
func (c *child) stop(grace time.Duration) error {
	defer removePIDFile(c.stateDir, c.name)
	select {
	case <-c.done:
		return nil
	default:
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		_ = c.cmd.Process.Kill()
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.done:
		return nil
	case <-t.C:
	}
	_ = c.cmd.Process.Kill()
	<-c.done
	return fmt.Errorf("%s did not exit within %v of SIGTERM; killed", c.name, grace)
}
