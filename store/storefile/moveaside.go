package storefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// MoveAside takes the store file at path out of the way so that the next
// Open creates a new, empty store, without ever opening the file with bbolt:
// it works on a store too damaged to open. It takes the file's lock first
// (ErrLocked if another process holds it past timeout; zero or negative
// means DefaultLockTimeout), then renames the file to backup, or removes it
// if backup is empty, and fsyncs the directory. Temporary files of
// interrupted creations go too. It returns false, and does nothing, when
// there is no file at path.
func MoveAside(path, backup string, timeout time.Duration) (moved bool, err error) {
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("move store %s aside: %w", path, err)
	}
	defer f.Close()
	if err := Lock(f, timeout); err != nil {
		return false, fmt.Errorf("move store %s aside: %w", path, err)
	}
	if backup == "" {
		err = os.Remove(path)
	} else {
		if _, serr := os.Lstat(backup); serr == nil {
			return false, fmt.Errorf("move store %s aside: %s: %w", path, backup, fs.ErrExist)
		}
		err = os.Rename(path, backup)
	}
	if err != nil {
		return false, fmt.Errorf("move store %s aside: %w", path, err)
	}
	dir, base := SplitPath(path)
	if err := SyncDir(dir); err != nil {
		return true, fmt.Errorf("move store %s aside: %w", path, err)
	}
	RemoveStaleCreating(dir, base)
	return true, nil
}
