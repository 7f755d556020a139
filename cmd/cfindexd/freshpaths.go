package main

import (
	"errors"
	"io/fs"
	"os"
)

// freshPaths are the paths a start creates (the data directory, the
// chain's directory, the store): those that did not exist before it.
type freshPaths []string

// missingPaths returns those of paths that do not exist, in order.
func missingPaths(paths ...string) freshPaths {
	var f freshPaths
	for _, p := range paths {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			f = append(f, p)
		}
	}
	return f
}

// remove undoes a start that failed: it removes what the start created,
// last first; a directory that is not empty stays.
func (f freshPaths) remove() {
	for i := len(f) - 1; i >= 0; i-- {
		_ = os.Remove(f[i])
	}
}
