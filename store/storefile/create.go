package storefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// CreatingInfix names the temporary files a new store is built in:
// <store file name>.creating-<random>, in the store's directory.
const CreatingInfix = ".creating-"

// StaleCreatingAge is how old a temporary file from an interrupted creation
// must be before a later creation removes it. Creating a store takes
// milliseconds; the margin keeps a concurrent creator's file alone.
const StaleCreatingAge = time.Minute

// SyncFile fsyncs the file at name.
func SyncFile(name string) error {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", name, err)
	}
	return nil
}

// LinkNoReplace makes the file at oldname visible as newname too, failing
// with an error wrapping fs.ErrExist if newname exists: a hard link never
// replaces. Where hard links are not supported it renames, after checking
// that newname is absent.
func LinkNoReplace(oldname, newname string) error {
	err := os.Link(oldname, newname)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	if _, serr := os.Lstat(newname); serr == nil {
		return fmt.Errorf("%s: %w", newname, fs.ErrExist)
	}
	if rerr := os.Rename(oldname, newname); rerr != nil {
		return fmt.Errorf("link %s: %w; rename: %w", newname, err, rerr)
	}
	return nil
}

// SplitPath returns the directory (never empty) and file name of path.
func SplitPath(path string) (dir, base string) {
	dir, base = filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	return dir, base
}

// RemoveStaleCreating removes temporary files of interrupted creations of
// the store named base in dir, leaving recent ones (a creation in
// progress) alone. Failures are ignored: a leftover file only costs space.
func RemoveStaleCreating(dir, base string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), base+CreatingInfix) {
			continue
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < StaleCreatingAge {
			continue
		}
		_ = os.Remove(filepath.Join(dir, e.Name()))
	}
}
