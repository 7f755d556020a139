package p2p

import (
	"errors"

	"github.com/rs/zerolog"
)

// ourFailure starts the log line for a request that failed on our side
// while the peer did nothing wrong: at error when the view is corrupt
// (ErrCorrupt: the operator must act, and the error says how), at
// warn for anything else (the node busy or away, a reorg raced the
// request), which goes away by itself.
func ourFailure(log *zerolog.Logger, err error) *zerolog.Event {
	if errors.Is(err, ErrCorrupt) {
		return log.Error()
	}
	return log.Warn()
}
