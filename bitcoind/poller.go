package bitcoind

import (
	"context"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/rs/zerolog"
)

// TipReader is the part of *Client a Poller needs.
type TipReader interface {
	GetBestBlockHash(ctx context.Context) (chainhash.Hash, error)
}

var _ TipReader = (*Client)(nil)

// Poller asks the node for its best block hash every interval and emits a
// Hint when it changes (and once for the first tip it sees). Use it when
// ZMQ is not configured, or beside ZMQ as a safety net against a silent
// publisher.
type Poller struct {
	src      TipReader
	interval time.Duration
	log      zerolog.Logger
	sink     *hintSink
}

// NewPoller returns a Poller; Run starts it.
func NewPoller(src TipReader, interval time.Duration, log zerolog.Logger) *Poller {
	if interval <= 0 {
		interval = 5 * time.Second
	}
	return &Poller{src: src, interval: interval, log: log, sink: newHintSink()}
}

// Hints returns the channel of hints. It is never closed.
func (p *Poller) Hints() <-chan Hint { return p.sink.ch }

// Run polls until ctx is done and then returns nil. Node errors are logged
// (the first of a streak at warn level) and polling continues.
func (p *Poller) Run(ctx context.Context) error {
	var last chainhash.Hash
	have, failing := false, false
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		hash, err := p.src.GetBestBlockHash(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			if !failing {
				p.log.Warn().Err(err).Msg("polling best block hash failed; will keep trying")
			} else {
				p.log.Debug().Err(err).Msg("polling best block hash failed")
			}
			failing = true
		default:
			if failing {
				p.log.Info().Msg("polling best block hash works again")
				failing = false
			}
			if !have || hash != last {
				p.sink.emit(Hint{Hash: hash})
				last, have = hash, true
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
