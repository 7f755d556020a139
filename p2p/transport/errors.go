package transport

import "errors"

// errBadEntry: a queued entry is not complete v1 frames; the server built
// it, so this is a bug on our side, and the connection ends.
var errBadEntry = errors.New("queued entry is not complete frames")

// errNotV1: Establish was given a link that is not a fresh V1 link.
var errNotV1 = errors.New("establish needs the connection's v1 link")
