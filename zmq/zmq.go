package zmq

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/lightninglabs/gozmq"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/backoff"
)

// ZMQ topics published by Bitcoin Core that cfindexd reads: the
// Subscriber takes the first three, the mempool mirror sequence and rawtx.
const (
	TopicHashBlock = "hashblock" // body: 32-byte block hash, display (reversed) byte order
	TopicRawBlock  = "rawblock"  // body: serialized block
	TopicSequence  = "sequence"  // body: 32-byte hash (display order) + label C|D|A|R [+ 8-byte LE mempool sequence]
	TopicRawTx     = "rawtx"     // body: serialized transaction (with witness), on entering the mempool and in every block
)

// Config says where to subscribe.
type Config struct {
	// Endpoint is the publisher address, e.g. "tcp://127.0.0.1:28332"
	// (bitcoind -zmqpubhashblock=...; getzmqnotifications lists them).
	Endpoint string
	// Topics to subscribe to on Endpoint; default {"hashblock"}. Core
	// may publish each topic on its own endpoint: run one subscriber per
	// endpoint and merge their hints.
	Topics []string
	// ReadTimeout bounds the wait for the rest of a multipart message
	// once its first frame arrived; default 30s.
	ReadTimeout time.Duration
	// RetryMin and RetryMax bound the reconnect backoff; defaults 250ms
	// and 30s.
	RetryMin, RetryMax time.Duration
	// Rand drives the backoff jitter; nil seeds one from the clock.
	Rand *rand.Rand
}

// Subscriber turns Bitcoin Core's ZMQ block notifications into Hints. A
// Core ZMQ message has three frames: topic, body, and a 4-byte
// little-endian sequence number counted per topic. A gap in that number
// (lost messages, publisher restart), a reconnect or a block disconnect
// ("sequence" label D) produces a Hint with Resync set.
type Subscriber struct {
	cfg  Config
	log  zerolog.Logger
	sink *hintSink

	lastSeq map[string]uint32
	resync  bool
}

// NewSubscriber validates cfg; Run connects.
func NewSubscriber(cfg Config, log zerolog.Logger) (*Subscriber, error) {
	if cfg.Endpoint == "" {
		return nil, fmt.Errorf("zmq: empty endpoint")
	}
	if !strings.HasPrefix(cfg.Endpoint, "tcp://") {
		return nil, fmt.Errorf("zmq: endpoint %q: only tcp://host:port is supported", cfg.Endpoint)
	}
	if len(cfg.Topics) == 0 {
		cfg.Topics = []string{TopicHashBlock}
	}
	for _, t := range cfg.Topics {
		switch t {
		case TopicHashBlock, TopicRawBlock, TopicSequence:
		default:
			return nil, fmt.Errorf("zmq: unsupported topic %q (want hashblock, rawblock or sequence)", t)
		}
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 30 * time.Second
	}
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = 250 * time.Millisecond
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = 30 * time.Second
	}
	return &Subscriber{
		cfg:     cfg,
		log:     log.With().Str("zmq", cfg.Endpoint).Logger(),
		sink:    newHintSink(),
		lastSeq: make(map[string]uint32),
	}, nil
}

// Hints returns the channel of hints. It is never closed.
func (s *Subscriber) Hints() <-chan Hint { return s.sink.ch }

// Run subscribes and delivers hints until ctx is done, reconnecting with
// backoff when the publisher goes away. It returns nil when ctx is done.
// Every (re)connection emits a Resync hint, since anything published while
// we were not connected is lost.
func (s *Subscriber) Run(ctx context.Context) error {
	retry := backoff.New(s.cfg.RetryMin, s.cfg.RetryMax, s.cfg.Rand)
	failing := false
	for {
		conn, err := Dial(ctx, s.cfg.Endpoint, s.cfg.Topics, s.cfg.ReadTimeout)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			if !failing {
				s.log.Warn().Err(err).Msg("cannot subscribe to ZMQ publisher; retrying (is Bitcoin Core running with -zmqpubhashblock?)")
			}
			failing = true
			if retry.Wait(ctx) != nil {
				return nil
			}
			continue
		}
		failing = false
		retry.Reset()
		s.log.Info().Strs("topics", s.cfg.Topics).Msg("subscribed to ZMQ notifications")
		s.restart()
		err = s.receive(ctx, conn)
		_ = conn.Close()
		if ctx.Err() != nil {
			return nil
		}
		s.log.Warn().Err(err).Msg("ZMQ subscription lost; reconnecting")
		if retry.Wait(ctx) != nil {
			return nil
		}
	}
}

// Dial runs gozmq.Subscribe (which cannot be cancelled) in a goroutine
// so that ctx still ends the wait; a connection that arrives after ctx
// ended is closed.
func Dial(ctx context.Context, endpoint string, topics []string, readTimeout time.Duration) (*gozmq.Conn, error) {
	type result struct {
		conn *gozmq.Conn
		err  error
	}
	done := make(chan result, 1)
	go func() {
		c, err := gozmq.Subscribe(endpoint, topics, readTimeout)
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		return r.conn, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.conn != nil {
				_ = r.conn.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// restart forgets sequence numbers (a new connection starts wherever the
// publisher is) and flags the next hint as Resync.
func (s *Subscriber) restart() {
	clear(s.lastSeq)
	s.sink.emit(Hint{Resync: true})
}

func (s *Subscriber) receive(ctx context.Context, conn *gozmq.Conn) error {
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	for {
		parts, err := conn.Receive(nil)
		if err != nil {
			var nerr net.Error
			if errors.As(err, &nerr) && nerr.Timeout() && ctx.Err() == nil {
				// gozmq reconnected underneath us (or a message
				// stalled half-way): we may have missed messages.
				s.log.Warn().Err(err).Msg("ZMQ connection interrupted; will resync")
				clear(s.lastSeq)
				s.resync = true
				continue
			}
			return err
		}
		s.handle(parts)
	}
}

// handle interprets one multipart message.
func (s *Subscriber) handle(parts [][]byte) {
	if len(parts) != 3 || len(parts[2]) != 4 {
		s.log.Warn().Int("parts", len(parts)).Msg("ignoring ZMQ message that is not topic/body/4-byte sequence")
		s.resync = true
		return
	}
	topic, body := string(parts[0]), parts[1]
	seq := binary.LittleEndian.Uint32(parts[2])
	if last, ok := s.lastSeq[topic]; ok && seq != last+1 {
		s.log.Warn().Str("topic", topic).Uint32("expected", last+1).Uint32("got", seq).Msg("gap in ZMQ sequence numbers; will resync")
		s.resync = true
	}
	s.lastSeq[topic] = seq

	hint, ok := Hint{}, false
	switch topic {
	case TopicHashBlock:
		if len(body) == chainhash.HashSize {
			hint.Hash, ok = ReversedHash(body), true
		}
	case TopicRawBlock:
		if len(body) >= 80 {
			hint.Hash, ok = chainhash.DoubleHashH(body[:80]), true
		}
	case TopicSequence:
		if len(body) >= chainhash.HashSize+1 {
			switch body[chainhash.HashSize] {
			case 'C':
				hint.Hash, ok = ReversedHash(body[:chainhash.HashSize]), true
			case 'D':
				hint.Hash, hint.Resync, ok = ReversedHash(body[:chainhash.HashSize]), true, true
			}
		}
	}
	if !ok && !s.resync {
		return // mempool message, or a body we do not understand
	}
	if s.resync {
		hint.Resync = true
		s.resync = false
	}
	s.sink.emit(hint)
}

func ReversedHash(b []byte) chainhash.Hash {
	var h chainhash.Hash
	for i := range chainhash.HashSize {
		h[i] = b[chainhash.HashSize-1-i]
	}
	return h
}
