package p2p

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
	"github.com/cfindexd/cfindexd/p2p/transport"
	"github.com/cfindexd/cfindexd/p2p/v2conn"
	"github.com/cfindexd/cfindexd/wireframe"
)

// v2SealBudget is the server-wide bytes of v2 messages over
// transport.MaxSmallFrame being encrypted and written (each holds twice
// its size): the largest message, or two blocks of half its size, at once.
const v2SealBudget = 8 << 20

// linkOptions are the transport options of a peer.
func (p *peer) linkOptions() transport.Options {
	s := p.srv
	return transport.Options{
		Net:               s.cfg.Params.Net,
		HandshakeDeadline: p.handshakeDeadline,
		WriteTimeout:      s.cfg.WriteTimeout,
		ReadBuffer:        peerReadBuffer,
		WriteBuffer:       peerWriteBuffer,
		Recv:              s.recvBudget,
		MinRate:           s.cfg.MinRecvRate,
		Now:               s.cfg.Now,
		Seal:              s.sealBudget,
	}
}

// establish tells the peer's transport and, for v2, runs the handshake,
// within the handshake deadline; the peer's reader and writer are then
// the transport's. Until then they are v1's (newPeer), and stay so with
// v2 off. A failure ends the connection without a penalty, as garbage
// before a v1 handshake does.
func (p *peer) establish(ctx context.Context) error {
	s := p.srv
	if s.cfg.DisableV2 {
		return nil
	}
	ctx, cancel := context.WithDeadline(ctx, p.handshakeDeadline)
	defer cancel()
	o := p.linkOptions()
	o.Admission = &handshakeTicket{gate: s.handshakes, ctx: ctx, group: p.slot.netGroup, exempt: p.slot.whitelisted}
	link, err := transport.Establish(ctx, p.conn, o, p.link)
	if err != nil {
		var refused *handshakeRefused
		switch {
		case errors.As(err, &refused):
			s.transportMetrics.V2Handshake(refused.result)
		case errors.Is(err, v2conn.ErrMisbehaving):
			s.transportMetrics.V2Handshake("failed")
		}
		if errors.Is(err, v2conn.ErrMisbehaving) || errors.As(err, &refused) {
			return fmt.Errorf("%w: transport: %v", errDisconnect, err)
		}
		return fmt.Errorf("transport: %w", err)
	}
	if link.Transport == v2conn.V2 {
		s.transportMetrics.V2Handshake("ok")
	}
	p.setLink(link)
	return nil
}

// setLink makes link the peer's reader and writer.
func (p *peer) setLink(link transport.Link) {
	p.link, p.transport, p.fr, p.sink = link, link.Transport, link.Source, link.Sink
}

// handshakeTicket is one connection's pass through the handshake gate: its
// first curve step charges its network group's rate (whitelisted peers are
// exempt), and each step waits for a slot until the handshake deadline.
type handshakeTicket struct {
	gate    *peerpolicy.HandshakeGate
	ctx     context.Context
	group   uint64
	exempt  bool
	charged bool
}

// handshakeRefused is the error of a handshake the gate refused, with the
// result V2Handshake reports.
type handshakeRefused struct {
	result string
	err    error
}

func (e *handshakeRefused) Error() string { return e.err.Error() }
func (e *handshakeRefused) Unwrap() error { return e.err }

// Acquire implements v2conn.HandshakeAdmission.
func (t *handshakeTicket) Acquire() (func(), error) {
	if !t.charged && !t.exempt {
		t.charged = true
		if err := t.gate.Start(t.group); err != nil {
			return nil, &handshakeRefused{result: "refused_rate", err: err}
		}
	}
	t.charged = true
	release, err := t.gate.Acquire(t.ctx)
	if err != nil {
		return nil, &handshakeRefused{result: "refused_busy", err: err}
	}
	return release, nil
}

// TransportMetrics is an optional interface of a Metrics: peers and bytes
// by transport ("v1", "v2") and v2 handshakes by result (one of
// V2HandshakeResults).
type TransportMetrics interface {
	// TransportPeers reports the peers past the handshake on transport.
	TransportPeers(transport string, n int)
	// TransportBytes counts bytes received and sent on transport: whole
	// messages on the wire (v2: packets, their overhead included).
	TransportBytes(transport string, received, sent int)
	// V2Handshake counts one v2 handshake by result.
	V2Handshake(result string)
}

// V2HandshakeResults lists the results V2Handshake reports: completed;
// failed by the initiator's fault (no terminator, bad authentication);
// refused because its network group was over its rate; refused because
// no slot freed before the handshake deadline.
func V2HandshakeResults() []string {
	return []string{"ok", "failed", "refused_rate", "refused_busy"}
}

// Transports lists the transports TransportMetrics reports.
func Transports() []string { return []string{v2conn.V1.String(), v2conn.V2.String()} }

// nopTransportMetrics stands in for a Metrics without TransportMetrics.
type nopTransportMetrics struct{}

func (nopTransportMetrics) TransportPeers(string, int)      {}
func (nopTransportMetrics) TransportBytes(string, int, int) {}
func (nopTransportMetrics) V2Handshake(string)              {}

// transportCounters are the server's totals by transport, for TransportStats.
type transportCounters struct {
	peers          [2]atomic.Int64
	received, sent [2]atomic.Int64
}

// TransportStat is one transport's peers and bytes so far.
type TransportStat struct {
	Transport     string
	Peers         int
	BytesReceived int64
	BytesSent     int64
}

// TransportStats returns peers past the handshake and bytes so far, v1
// then v2.
func (s *Server) TransportStats() []TransportStat {
	out := make([]TransportStat, 2)
	for i, name := range Transports() {
		out[i] = TransportStat{Transport: name, Peers: int(s.transports.peers[i].Load()),
			BytesReceived: s.transports.received[i].Load(), BytesSent: s.transports.sent[i].Load()}
	}
	return out
}

// transportIndex is t's index in Transports.
func transportIndex(t v2conn.Transport) int {
	if t == v2conn.V2 {
		return 1
	}
	return 0
}

// transportUp and transportDown count a peer past the handshake.
func (s *Server) transportUp(t v2conn.Transport, delta int64) {
	i := transportIndex(t)
	n := s.transports.peers[i].Add(delta)
	s.transportMetrics.TransportPeers(Transports()[i], int(n))
}

// countBytes counts bytes received and sent by a peer on t.
func (s *Server) countBytes(t v2conn.Transport, received, sent int) {
	i := transportIndex(t)
	if received > 0 {
		s.transports.received[i].Add(int64(received))
	}
	if sent > 0 {
		s.transports.sent[i].Add(int64(sent))
	}
	s.transportMetrics.TransportBytes(Transports()[i], received, sent)
}

// A message of wireframe.MaxPayload must fit the seal budget, or its
// sealing would wait forever.
var _ = [v2SealBudget - 2*wireframe.MaxPayload]struct{}{}
