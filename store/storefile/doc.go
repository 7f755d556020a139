// Package storefile owns the store's file as a file, apart from what is in
// it: the exclusive lock two processes agree on, durable creation (fsyncs,
// a link that never replaces, temporary files of interrupted creations)
// and moving a file too damaged to open out of the way. It knows nothing
// of bbolt or the schema (package store).
package storefile

import (
	"errors"
	"time"
)

// ErrLocked is returned when another process (or another open store in
// this process) holds the file and did not release it in time.
var ErrLocked = errors.New("store file is locked by another process")

// DefaultLockTimeout is the lock wait used when none is given, so that a
// second process never waits forever.
const DefaultLockTimeout = time.Second
