package mempool

import (
	"errors"
	"testing"

	"github.com/rs/zerolog"
)

func testLogger(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
}

// errBlockNotFound is what the fake sources answer for a block they lack.
var errBlockNotFound = errors.New("block not found")
