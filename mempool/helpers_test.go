package mempool

import (
	"errors"
)

// errBlockNotFound is what the fake sources answer for a block they lack.
var errBlockNotFound = errors.New("block not found")
