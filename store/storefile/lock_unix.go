//go:build unix

package storefile

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// Lock takes the exclusive flock bbolt itself takes on the file, waiting
// up to timeout, so that the checks before bbolt opens the file never read
// pages another process is writing. bbolt's own flock on the same open file
// then succeeds at once; its Close releases it.
func Lock(f *os.File, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waited %s: %w", timeout, ErrLocked)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// SyncDir fsyncs directory dir, making a rename or link in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}
