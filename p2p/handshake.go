package p2p

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/p2p/spfilter"
)

// Handshake constants.
const (
	// Services are the service bits this server always advertises:
	// NODE_BLOOM is added when BIP-37 serving is on, NODE_P2P_V2 (BIP-324)
	// unless v2 is off (Config.DisableV2). neutrino refuses (and bans)
	// peers without WITNESS and COMPACT_FILTERS.
	Services = wire.SFNodeNetwork | wire.SFNodeWitness | wire.SFNodeCF
	// ProtocolVersion is the protocol version this server speaks.
	ProtocolVersion = wire.AddrV2Version // 70016
	// MinPeerProtocolVersion is the oldest version accepted: BIP-37's relay
	// flag in version messages (70001). BIP-157 clients are all newer.
	MinPeerProtocolVersion = wire.BIP0037Version
)

// handshake runs the inbound version/verack exchange: read the peer's
// version, send ours and verack, then read until the peer's verack,
// accepting sendaddrv2, wtxidrelay and sendheaders on the way. Other
// messages before verack are discarded unbuffered, as Core ignores them
// (msgread.Reader: only handshake commands are decoded before verack).
//
// Garbage before the handshake completes ends the connection without a
// penalty: it is what a BIP-324 (v2) client sends first before it falls
// back to v1 by reconnecting, and what port scanners send.
func (p *peer) handshake(ctx context.Context) error {
	err := p.versionExchange(ctx)
	if errors.Is(err, ErrMisbehaving) {
		return fmt.Errorf("%w: during handshake: %v", errDisconnect, err)
	}
	return err
}

func (p *peer) versionExchange(ctx context.Context) error {
	deadline := p.handshakeDeadline
	f, err := p.read(true, deadline)
	if err != nil {
		return err
	}
	v, ok := f.Msg.(*wire.MsgVersion)
	if !ok {
		return fmt.Errorf("%w: %s before version", errDisconnect, f.Command)
	}
	if v.ProtocolVersion < int32(MinPeerProtocolVersion) {
		return fmt.Errorf("%w: protocol version %d below %d", errDisconnect, v.ProtocolVersion, MinPeerProtocolVersion)
	}
	p.st.pver = min(uint32(v.ProtocolVersion), ProtocolVersion)
	if p.st.bloom != nil {
		p.st.bloom.SetRelay(!v.DisableRelayTx)
	}
	p.log = p.log.With().Str("agent", v.UserAgent).Uint32("pver", p.st.pver).Logger()

	if err := p.emit(ctx)(outbound{Msg: p.versionMsg(), Enc: wire.BaseEncoding}); err != nil {
		return err
	}
	if err := p.emit(ctx)(outbound{Msg: wire.NewMsgVerAck(), Enc: wire.BaseEncoding}); err != nil {
		return err
	}
	for {
		f, err := p.read(true, deadline)
		if err != nil {
			return err
		}
		switch f.Msg.(type) {
		case *wire.MsgVerAck:
			return nil
		case *wire.MsgWTxIdRelay:
			p.st.wtxidRelay = p.st.pver >= wire.AddrV2Version
		case *wire.MsgSendAddrV2:
			p.st.sendAddrV2 = true
		case *wire.MsgSendHeaders:
			p.st.preferHeaders.Store(true)
		}
	}
}

// versionMsg is this server's version: its services, the committed tip as
// start height, and relay=false unless transaction relay is enabled.
func (p *peer) versionMsg() *wire.MsgVersion {
	var height int32
	if tip, ok := p.srv.cfg.View.Tip(); ok {
		height = int32(tip.Height)
	}
	you := tcpNetAddress(p.conn.RemoteAddr(), 0)
	services := Services
	if p.st.bloom != nil {
		services |= wire.SFNodeBloom
	}
	if !p.srv.cfg.DisableV2 {
		services |= wire.SFNodeP2PV2
	}
	if p.srv.env.sp != nil {
		services |= spfilter.ServiceFlag
	}
	me := tcpNetAddress(p.conn.LocalAddr(), services)
	msg := wire.NewMsgVersion(me, you, p.srv.nonce, height)
	msg.ProtocolVersion = int32(ProtocolVersion)
	msg.Services = services
	msg.UserAgent = p.srv.cfg.UserAgent
	msg.DisableRelayTx = p.srv.env.relay == nil
	return msg
}

// tcpNetAddress converts a socket address for a version message.
func tcpNetAddress(a net.Addr, services wire.ServiceFlag) *wire.NetAddress {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return wire.NewNetAddress(tcp, services)
	}
	return wire.NewNetAddressIPPort(net.IPv4zero, 0, services)
}
