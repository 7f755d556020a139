//go:build !unix

package storefile

import (
	"os"
	"time"
)

// Lock is a no-op where flock does not exist; bbolt still locks the
// file when it opens it.
func Lock(*os.File, time.Duration) error { return nil }

// SyncDir is a no-op where directories cannot be fsynced.
func SyncDir(string) error { return nil }
