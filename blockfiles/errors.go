package blockfiles

import "errors"

// ErrMalformed means a record of the blocks directory (a block, its undo
// data or the obfuscation key) could not be decoded.
var ErrMalformed = errors.New("malformed data in the blocks directory")
