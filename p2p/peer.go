package p2p

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/p2p/msgread"
	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
	"github.com/cfindexd/cfindexd/p2p/transport"
	"github.com/cfindexd/cfindexd/p2p/v2conn"
)

// sendQueueFrames bounds the frames queued for one peer; the byte budgets
// (Config.PeerSendBudget, Config.SendBudget) are the real limit, this only
// sizes the channel.
const sendQueueFrames = 256

// outFrame is one entry of the send queue: an encoded message waiting for
// the writer, frame (or its header alone), then payload if set (shared
// read-only, a cached block); or count complete frames of command back to
// back in frame (a chunk of cfilters). Its grant covers all of its bytes.
type outFrame struct {
	command string
	frame   []byte
	payload []byte
	count   int
	grant   peerpolicy.SendGrant
	recycle func([]byte) // takes frame back once written or dropped
}

// peer is one inbound connection.
type peer struct {
	srv    *Server
	conn   net.Conn
	ip     netip.Addr
	slot   *peerSlot
	log    zerolog.Logger
	st     *peerState
	sendq  chan outFrame
	budget *peerpolicy.SendBudget
	// handshakeDeadline ends the transport and version handshakes.
	handshakeDeadline time.Time
	// link is the peer's transport: v1's from newPeer, v2's once
	// establish has seen a v2 initiator; transport, fr and sink are its
	// parts.
	link      transport.Link
	transport v2conn.Transport
	fr        transport.Source
	sink      transport.Sink
}

// newPeer builds the peer of an admitted connection (its buffers are
// allocated only once admitted).
func newPeer(s *Server, conn net.Conn, slot *peerSlot) *peer {
	p := &peer{
		srv:    s,
		conn:   conn,
		ip:     slot.ip,
		slot:   slot,
		log:    s.log.With().Str("peer", conn.RemoteAddr().String()).Logger(),
		st:     slot.st,
		sendq:  make(chan outFrame, sendQueueFrames),
		budget: s.sendPool.NewBudget(int64(s.cfg.PeerSendBudget), s.cfg.SendStallTimeout),
		// conn deadlines are on the wall clock, whatever Config.Now is.
		handshakeDeadline: time.Now().Add(s.cfg.HandshakeTimeout),
	}
	if s.env.bloom != nil {
		p.st.bloom = s.env.bloom.NewPeer(p.st.requester)
	}
	p.setLink(transport.V1(conn, p.linkOptions()))
	return p
}

// read reads one frame by deadline and counts it.
func (p *peer) read(handshaking bool, deadline time.Time) (msgread.Frame, error) {
	f, err := p.fr.Next(msgread.State{PVer: p.st.pver, Handshaking: handshaking, Relay: p.srv.env.relay != nil,
		Bloom: p.st.bloom != nil, Whitelisted: p.slot.whitelisted, Deadline: deadline})
	if f.Size > 0 {
		cmd := f.Command
		if !msgread.Known(cmd) {
			cmd = "unknown"
		}
		p.srv.metrics.MessageReceived(cmd, f.Size)
		p.srv.countBytes(p.transport, f.Size, 0)
	}
	if f.Dropped {
		p.srv.metrics.LargeFrameDropped()
		p.log.Debug().Str("cmd", f.Command).Int("bytes", f.Size).Msg("discarding large message: receive budget spent")
	}
	if err == nil && f.BadChecksum {
		p.log.Debug().Str("cmd", f.Command).Msg("dropped message with bad checksum")
	}
	if errors.Is(err, v2conn.ErrOverBudget) {
		p.srv.metrics.LargeFrameDropped() // and the peer with it: a v2 packet cannot be skipped
	}
	var notServed *msgread.NotServedError
	if errors.As(err, &notServed) {
		err = bloomNotServed(notServed.Command)
	}
	return f, err
}

// emit returns the emitFunc of this peer: encode, take budget, queue.
func (p *peer) emit(ctx context.Context) emitFunc {
	return func(o outbound) error {
		if o.Frame == nil {
			frame, err := encodeFrame(o.Msg, p.st.pver, p.srv.cfg.Params.Net, o.Enc)
			if err != nil {
				return err
			}
			o.Command, o.Frame = o.Msg.Command(), frame
		}
		g, err := p.budget.Take(ctx, o.cost())
		if errors.Is(err, peerpolicy.ErrSendStalled) {
			return errSendStalled
		}
		if err != nil {
			return err
		}
		select {
		case p.sendq <- outFrame{command: o.Command, frame: o.Frame, payload: o.Payload, count: max(o.Count, 1), grant: g, recycle: o.Recycle}:
			return nil
		case <-ctx.Done():
			p.budget.Give(g)
			if o.Recycle != nil {
				o.Recycle(o.Frame)
			}
			return ctx.Err()
		}
	}
}

// writeLoop drains the send queue onto the socket through the peer's
// transport, flushing when the queue is empty. A failed or timed-out write
// ends the connection; each write to the socket gets Config.WriteTimeout.
func (p *peer) writeLoop(ctx context.Context) (err error) {
	defer p.recoverPeer("writer", &err)
	for {
		var f outFrame
		select {
		case f = <-p.sendq:
		case <-ctx.Done():
			return ctx.Err()
		}
		n, err := p.sink.Write(ctx, f.frame, f.payload)
		p.budget.Give(f.grant)
		if err != nil {
			return fmt.Errorf("write %s: %w", f.command, err)
		}
		p.srv.countSent(f)
		p.srv.countBytes(p.transport, 0, n)
		if f.recycle != nil {
			f.recycle(f.frame) // the sink copied it or wrote it out
		}
		if len(p.sendq) == 0 {
			if err := p.sink.Flush(); err != nil {
				return fmt.Errorf("flush: %w", err)
			}
		}
	}
}

// drainQueue returns the budget of frames never written (the peer is gone).
func (p *peer) drainQueue() {
	for {
		select {
		case f := <-p.sendq:
			p.budget.Give(f.grant)
			if f.recycle != nil {
				f.recycle(f.frame)
			}
		default:
			return
		}
	}
}

// tickLoop pings the peer (at once, then every PingInterval, so that
// eviction knows its ping time early) and announces new committed tips.
func (p *peer) tickLoop(ctx context.Context) (err error) {
	defer p.recoverPeer("ticker", &err)
	ping := time.NewTicker(p.srv.cfg.PingInterval)
	defer ping.Stop()
	view := p.srv.cfg.View
	changed := view.TipChanged()
	emit := p.emit(ctx)
	sendPing := func() error {
		nonce := randomUint64s(1)[0] | 1 // never 0, which means "none in flight"
		p.st.pingSent.Store(p.srv.cfg.Now().UnixNano())
		p.st.pingNonce.Store(nonce)
		return emit(outbound{Msg: wire.NewMsgPing(nonce), Enc: wire.BaseEncoding})
	}
	if err := sendPing(); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ping.C:
			if err := sendPing(); err != nil {
				return err
			}
		case <-changed:
			changed = view.TipChanged()
			tip, ok := view.Tip()
			if !ok {
				continue
			}
			msg, err := announcement(view, tip, p.st.known, p.st.preferHeaders.Load())
			if err != nil {
				ourFailure(&p.log, err).Err(err).Msg("building tip announcement failed")
				continue
			}
			if msg != nil {
				if err := emit(outbound{Msg: msg, Enc: wire.BaseEncoding}); err != nil {
					return err
				}
			}
		}
	}
}

// readLoop reads, dispatches and repeats until the peer misbehaves, goes
// idle for Config.IdleTimeout, or the connection ends.
func (p *peer) readLoop(ctx context.Context) error {
	emit := p.emit(ctx)
	for {
		f, err := p.read(false, time.Now().Add(p.srv.cfg.IdleTimeout))
		if err != nil {
			return err
		}
		if f.Msg == nil {
			continue
		}
		err = p.handle(ctx, f, emit)
		switch {
		case err == nil:
		case errors.Is(err, ErrMisbehaving), errors.Is(err, errDisconnect), ctx.Err() != nil:
			return err
		default:
			ourFailure(&p.log, err).Err(err).Str("cmd", f.Command).Msg("request failed on our side; peer kept")
		}
	}
}

// handle dispatches one message and returns the receive budget it holds,
// whatever happens in the handler.
func (p *peer) handle(ctx context.Context, f msgread.Frame, emit emitFunc) error {
	defer f.Release()
	return dispatch(ctx, p.srv.env, p.st, f.Msg, emit)
}

// run serves the connection until it ends and reports why. Each of the
// peer's goroutines recovers its own panics (recoverPeer).
func (p *peer) run(ctx context.Context) (err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = p.conn.Close() })
	defer stop()

	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
		p.drainQueue()
	}()
	defer p.recoverPeer("reader", &err)
	if err := p.establish(ctx); err != nil {
		return err
	}
	var writeErr, tickErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		writeErr = p.writeLoop(ctx)
		cancel()
	}()

	if err := p.handshake(ctx); err != nil {
		return err
	}
	p.srv.peerUp()
	defer p.srv.peerDown()
	p.srv.transportUp(p.transport, 1)
	defer p.srv.transportUp(p.transport, -1)
	p.log.Debug().Msg("peer connected")

	wg.Add(1)
	go func() {
		defer wg.Done()
		tickErr = p.tickLoop(ctx)
		cancel()
	}()
	var bloomErr error
	if p.st.bloom != nil {
		p.startBloom()
		defer p.srv.env.bloom.DropPeer(p.st.bloom)
		wg.Add(1)
		go func() {
			defer wg.Done()
			bloomErr = p.bloomLoop(ctx)
			cancel()
		}()
	}
	err = p.readLoop(ctx)
	cancel()
	wg.Wait()
	for _, other := range []error{tickErr, bloomErr, writeErr} {
		// A panic or stall elsewhere is why the reader stopped.
		if errors.Is(other, errPanic) || errors.Is(other, errSendStalled) {
			return other
		}
	}
	if writeErr != nil && !errors.Is(writeErr, context.Canceled) && !errors.Is(err, ErrMisbehaving) &&
		!errors.Is(err, errDisconnect) {
		return writeErr
	}
	return err
}

// encodeFrame serialises msg as a complete frame (header and payload).
func encodeFrame(msg wire.Message, pver uint32, net wire.BitcoinNet, enc wire.MessageEncoding) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := wire.WriteMessageWithEncodingN(&buf, msg, pver, net, enc); err != nil {
		return nil, fmt.Errorf("encode %s: %w", msg.Command(), err)
	}
	return buf.Bytes(), nil
}
