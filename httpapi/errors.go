package httpapi

import "errors"

// Sentinel errors returned by New and Run.
var (
	// ErrBadConfig is returned by New for a configuration it cannot run
	// with (negative limits, a nil view).
	ErrBadConfig = errors.New("bad http server config")

	// ErrViewChanged is returned internally when the active chain moved
	// under a multi-read answer (a reorg during the request); handlers turn
	// it into a 503 the client may retry.
	ErrViewChanged = errors.New("active chain changed during the request")
)
