package httpapi

import "errors"

// Sentinel errors.
var (
	// ErrBadConfig is returned by New for a configuration it cannot run
	// with (negative limits, a nil view).
	ErrBadConfig = errors.New("bad http server config")

	// ErrNotFound is what a ChainReader's errors wrap for a height or a
	// hash it does not hold.
	ErrNotFound = errors.New("not found")

	// ErrViewChanged is returned internally when the active chain moved
	// under a multi-read answer (a reorg during the request); handlers turn
	// it into a 503 the client may retry.
	ErrViewChanged = errors.New("active chain changed during the request")
)
