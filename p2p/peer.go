package p2p

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"
	"golang.org/x/sync/semaphore"
)

// sendQueueFrames bounds the frames queued for one peer; the byte budget
// (Config.PeerSendBudget) is the real limit, this only sizes the channel.
const sendQueueFrames = 1024

// outFrame is one encoded message waiting for the writer.
type outFrame struct {
	command string
	frame   []byte
	weight  int64 // budget units held until written
}

// peer is one inbound connection.
type peer struct {
	srv    *Server
	conn   net.Conn
	ip     netip.Addr
	log    zerolog.Logger
	st     *peerState
	rd     *bufio.Reader
	hdr    [frameHeaderSize]byte
	sendq  chan outFrame
	budget *semaphore.Weighted
}

func newPeer(s *Server, conn net.Conn, ip netip.Addr) *peer {
	var key [16]byte
	_, _ = rand.Read(key[:])
	return &peer{
		srv:    s,
		conn:   conn,
		ip:     ip,
		log:    s.log.With().Str("peer", conn.RemoteAddr().String()).Logger(),
		st:     newPeerState(binary.LittleEndian.Uint64(key[:8]), binary.LittleEndian.Uint64(key[8:])),
		rd:     bufio.NewReaderSize(conn, 64<<10),
		sendq:  make(chan outFrame, sendQueueFrames),
		budget: semaphore.NewWeighted(int64(s.cfg.PeerSendBudget)),
	}
}

// read reads one frame and counts it.
func (p *peer) read() (inFrame, error) {
	f, err := readFrame(p.rd, p.srv.cfg.Params.Net, p.st.pver, &p.hdr)
	if f.size > 0 {
		cmd := f.command
		if _, known := commandRules[cmd]; !known {
			cmd = "unknown"
		}
		p.srv.metrics.MessageReceived(cmd, f.size)
	}
	if err == nil && f.badChecksum {
		p.log.Debug().Str("cmd", f.command).Msg("dropped message with bad checksum")
	}
	return f, err
}

// emit returns the emitFunc of this peer: encode, take budget, queue.
func (p *peer) emit(ctx context.Context) emitFunc {
	return func(o outbound) error {
		frame, err := encodeFrame(o.Msg, p.st.pver, p.srv.cfg.Params.Net, o.Enc)
		if err != nil {
			return err
		}
		w := min(int64(len(frame)), int64(p.srv.cfg.PeerSendBudget))
		if err := p.budget.Acquire(ctx, w); err != nil {
			return err
		}
		select {
		case p.sendq <- outFrame{command: o.Msg.Command(), frame: frame, weight: w}:
			return nil
		case <-ctx.Done():
			p.budget.Release(w)
			return ctx.Err()
		}
	}
}

// writeLoop drains the send queue onto the socket, flushing when the queue
// is empty. A failed or timed-out write ends the connection.
func (p *peer) writeLoop(ctx context.Context) error {
	bw := bufio.NewWriterSize(p.conn, 64<<10)
	for {
		var f outFrame
		select {
		case f = <-p.sendq:
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := p.conn.SetWriteDeadline(time.Now().Add(p.srv.cfg.WriteTimeout)); err != nil {
			return err
		}
		if _, err := bw.Write(f.frame); err != nil {
			return fmt.Errorf("write %s: %w", f.command, err)
		}
		p.srv.metrics.MessageSent(f.command, len(f.frame))
		p.budget.Release(f.weight)
		if len(p.sendq) == 0 {
			if err := bw.Flush(); err != nil {
				return fmt.Errorf("flush: %w", err)
			}
		}
	}
}

// tickLoop pings the peer and announces new committed tips.
func (p *peer) tickLoop(ctx context.Context) error {
	ping := time.NewTicker(p.srv.cfg.PingInterval)
	defer ping.Stop()
	view := p.srv.cfg.View
	changed := view.TipChanged()
	emit := p.emit(ctx)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ping.C:
			var nonce [8]byte
			_, _ = rand.Read(nonce[:])
			if err := emit(outbound{Msg: wire.NewMsgPing(binary.LittleEndian.Uint64(nonce[:])), Enc: wire.BaseEncoding}); err != nil {
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
				p.log.Warn().Err(err).Msg("building tip announcement failed")
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
		if err := p.conn.SetReadDeadline(time.Now().Add(p.srv.cfg.IdleTimeout)); err != nil {
			return err
		}
		f, err := p.read()
		if err != nil {
			return err
		}
		if f.msg == nil {
			continue
		}
		err = dispatch(ctx, p.srv.env, p.st, f.msg, emit)
		switch {
		case err == nil:
		case errors.Is(err, ErrMisbehaving), errors.Is(err, errDisconnect), ctx.Err() != nil:
			return err
		default:
			p.log.Warn().Err(err).Str("cmd", f.command).Msg("request failed on our side; peer kept")
		}
	}
}

// run serves the connection until it ends and reports why.
func (p *peer) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = p.conn.Close() })
	defer stop()

	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	var writeErr error
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
	p.log.Debug().Msg("peer connected")

	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = p.tickLoop(ctx)
		cancel()
	}()
	err := p.readLoop(ctx)
	cancel()
	wg.Wait()
	if writeErr != nil && !errors.Is(writeErr, context.Canceled) && !errors.Is(err, ErrMisbehaving) {
		return writeErr
	}
	return err
}

// disconnectCause classifies the end of a connection for metrics and logs.
func disconnectCause(err error, shuttingDown bool) string {
	var ne net.Error
	switch {
	case errors.Is(err, ErrMisbehaving):
		return "misbehaving"
	case shuttingDown:
		return "shutdown"
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "closed" // EOF, reset, a protocol-level disconnect without ban
}
