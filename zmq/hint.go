package zmq

import "github.com/btcsuite/btcd/chainhash/v2"

// Hint says the node's tip may have changed. It is only a hint: the
// follower must ask the node (getbestblockhash) and never trust Hash as the
// new tip.
type Hint struct {
	// Hash is the block named by the notification (zero if none).
	Hash chainhash.Hash
	// Resync means notifications may have been missed (a gap in the
	// sequence number, a reconnect, a dropped hint) or the tip moved
	// backwards (a block disconnect): re-read the node's tip and walk
	// back to the fork point rather than assume Hash extends our tip.
	Resync bool
}

// hintBuffer is the capacity of a Hints channel. When it is full the hint
// is dropped and the next one delivered carries Resync.
const hintBuffer = 128

// hintSink delivers hints without ever blocking the producer.
type hintSink struct {
	ch      chan Hint
	dropped bool
}

func newHintSink() *hintSink { return &hintSink{ch: make(chan Hint, hintBuffer)} }

func (s *hintSink) emit(h Hint) {
	if s.dropped {
		h.Resync = true
	}
	select {
	case s.ch <- h:
		s.dropped = false
	default:
		s.dropped = true
	}
}
