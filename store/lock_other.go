//go:build !unix

package store

import (
	"os"
	"time"
)

// lockFile is a no-op where flock does not exist; bbolt still locks the
// file when it opens it.
func lockFile(*os.File, time.Duration) error { return nil }

// syncDir is a no-op where directories cannot be fsynced.
func syncDir(string) error { return nil }
