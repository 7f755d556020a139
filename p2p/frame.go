package p2p

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"golang.org/x/sync/semaphore"

	"github.com/cfindexd/cfindexd/bloom"
	"github.com/cfindexd/cfindexd/wireframe"
)

// Message size limits, checked against the length in a frame header before
// anything is read or allocated for the payload.
const (
	// maxFramePayload is Core's MAX_PROTOCOL_MESSAGE_LENGTH: larger frames
	// of any command disconnect the peer.
	maxFramePayload = wireframe.MaxPayload
	// maxLocatorSize is Core's MAX_LOCATOR_SZ; a getheaders with more
	// locator hashes is refused (disconnect without penalty, as Core).
	maxLocatorSize = 101
	// maxGetHeadersPayload is a getheaders with wire's maximum of locator
	// hashes; above maxLocatorSize the request is refused after decoding.
	maxGetHeadersPayload = 4 + 3 + maxWireLocators*chainhash.HashSize + chainhash.HashSize
	// maxInvPayload is an inv or getdata with wire.MaxInvPerMsg entries
	// (Core's MAX_INV_SZ).
	maxInvPayload = 9 + wire.MaxInvPerMsg*invVectSize
	// maxFilterLoadPayload is a filterload of Core's largest filter
	// (36,000 bytes: a 3-byte CompactSize), k, tweak and flags; a larger
	// frame carries a filter Core refuses as misbehaviour too.
	maxFilterLoadPayload = 3 + bloom.MaxFilterSize + 4 + 4 + 1
	// maxFilterAddPayload is a filteradd of Core's largest element (520
	// bytes).
	maxFilterAddPayload = 3 + bloom.MaxFilterAddSize
	// invTypeWTx is BIP-339's MSG_WTX, which btcd's wire does not name.
	invTypeWTx wire.InvType = 5

	// maxSmallFrame is the largest payload read under the idle deadline
	// into a buffer of the peer's own. A larger ("large") frame is read
	// under a minimum transfer rate, and a large frame that is decoded
	// takes its bytes from the server-wide receive budget
	// (Config.RecvBudget) first.
	maxSmallFrame = 16 << 10
	// largeFrameGrace is the time a large frame gets on top of its size at
	// Config.MinRecvRate.
	largeFrameGrace = 5 * time.Second
	// payloadChunk is how much of a payload is read (and its buffer grown)
	// at a time: a buffer is never larger than twice what has arrived.
	payloadChunk = 16 << 10
)

// frameAction says what the reader does with a frame's payload.
type frameAction int

const (
	// actionDecode: read, checksum and decode the payload, then dispatch.
	actionDecode frameAction = iota
	// actionIgnore: discard the payload unbuffered.
	actionIgnore
	// actionForbidden: a BIP-37 message while BIP-37 serving is off. Core
	// disconnects a peer that sends one when NODE_BLOOM is not offered;
	// so does this server, without penalty.
	actionForbidden
)

// commandRule is the payload cap and the treatment of one command.
type commandRule struct {
	maxPayload uint32
	action     frameAction
	// handshake: decoded before verack too. Every other command is
	// discarded unbuffered until verack, as Core ignores it.
	handshake bool
	// relayOnly: decoded only when transaction relay is on; discarded
	// unbuffered otherwise.
	relayOnly bool
	// bloomOnly: a BIP-37 message, decoded only when BIP-37 serving is on,
	// under the tighter cap bloomMaxPayload (checked before the payload
	// is read); with serving off it gets withoutBloom instead, or, when
	// whitelistIgnored and the peer is whitelisted, is ignored (Core's
	// noban permission spares a mempool request).
	bloomOnly        bool
	bloomMaxPayload  uint32
	withoutBloom     frameAction
	whitelistIgnored bool
}

// commandRules holds the commands the server reads. Commands not listed are
// discarded unbuffered with the generic cap maxFramePayload, as Core
// ignores unknown messages; headers, addr, addrv2, block, cfilter and the
// like are among them: this server never decodes them, so their declared
// counts cost nothing.
var commandRules = map[string]commandRule{
	wire.CmdVersion:      {maxPayload: 400, action: actionDecode, handshake: true},
	wire.CmdVerAck:       {maxPayload: 0, action: actionDecode, handshake: true},
	wire.CmdSendAddrV2:   {maxPayload: 0, action: actionDecode, handshake: true},
	wire.CmdWTxIdRelay:   {maxPayload: 0, action: actionDecode, handshake: true},
	wire.CmdSendHeaders:  {maxPayload: 0, action: actionDecode, handshake: true},
	wire.CmdFeeFilter:    {maxPayload: 8, action: actionDecode},
	wire.CmdPing:         {maxPayload: 8, action: actionDecode},
	wire.CmdPong:         {maxPayload: 8, action: actionDecode},
	wire.CmdGetAddr:      {maxPayload: 0, action: actionDecode},
	wire.CmdGetHeaders:   {maxPayload: maxGetHeadersPayload, action: actionDecode},
	wire.CmdGetCFilters:  {maxPayload: 1 + 4 + chainhash.HashSize, action: actionDecode},
	wire.CmdGetCFHeaders: {maxPayload: 1 + 4 + chainhash.HashSize, action: actionDecode},
	wire.CmdGetCFCheckpt: {maxPayload: 1 + chainhash.HashSize, action: actionDecode},
	wire.CmdGetData:      {maxPayload: maxInvPayload, action: actionDecode},
	wire.CmdInv:          {maxPayload: maxInvPayload, action: actionDecode, relayOnly: true},
	wire.CmdNotFound:     {maxPayload: maxInvPayload, action: actionDecode, relayOnly: true},
	wire.CmdTx:           {maxPayload: maxFramePayload, action: actionDecode, relayOnly: true},
	// BIP-37 (bloomserve.go): without serving, Core's reaction to a node
	// without NODE_BLOOM (getblocks is ignored, as before serving).
	wire.CmdFilterLoad:  {maxPayload: maxFramePayload, action: actionDecode, bloomOnly: true, bloomMaxPayload: maxFilterLoadPayload, withoutBloom: actionForbidden},
	wire.CmdFilterAdd:   {maxPayload: maxFramePayload, action: actionDecode, bloomOnly: true, bloomMaxPayload: maxFilterAddPayload, withoutBloom: actionForbidden},
	wire.CmdFilterClear: {maxPayload: maxFramePayload, action: actionDecode, bloomOnly: true, bloomMaxPayload: 0, withoutBloom: actionForbidden},
	wire.CmdMemPool:     {maxPayload: maxFramePayload, action: actionDecode, bloomOnly: true, bloomMaxPayload: 0, withoutBloom: actionForbidden, whitelistIgnored: true},
	wire.CmdGetBlocks:   {maxPayload: maxFramePayload, action: actionDecode, bloomOnly: true, bloomMaxPayload: maxGetHeadersPayload, withoutBloom: actionIgnore},
}

// frameHeader is a decoded P2P v1 message header.
type frameHeader struct {
	wireframe.Header
	command string
}

// parseFrameHeader decodes and validates a header: magic, a command of
// printable ASCII padded with NULs, and the payload cap of the command.
func parseFrameHeader(b *[wireframe.HeaderSize]byte, net wire.BitcoinNet) (frameHeader, commandRule, error) {
	wh, cmd, ok := wireframe.DecodeHeader(b)
	h := frameHeader{Header: wh}
	if h.Magic != net {
		return h, commandRule{}, misbehaving("wrong network magic %08x", uint32(h.Magic))
	}
	if !ok {
		return h, commandRule{}, misbehaving("malformed command %q", cmd)
	}
	h.command = internCommand(cmd)
	rule, ok := commandRules[h.command]
	if !ok {
		rule = commandRule{maxPayload: maxFramePayload, action: actionIgnore}
	}
	if h.Length > rule.maxPayload {
		return h, rule, misbehaving("%s payload of %d bytes over the cap of %d", h.command, h.Length, rule.maxPayload)
	}
	return h, rule, nil
}

// internCommand returns the command as a string, without allocating for
// the commands the server knows.
func internCommand(cmd []byte) string {
	for known := range commandRules {
		if string(cmd) == known {
			return known
		}
	}
	return string(cmd)
}

// readState is what the reader needs to know of the connection to treat a
// frame.
type readState struct {
	pver uint32
	// handshaking: verack not yet received.
	handshaking bool
	// relay: transaction relay is on (tx, inv and notfound are decoded).
	relay bool
	// bloom: BIP-37 serving is on; whitelisted: the peer is whitelisted.
	bloom, whitelisted bool
	// deadline bounds the whole frame (the idle or handshake deadline);
	// zero: none. A large frame's rate deadline never extends it.
	deadline time.Time
}

// inFrame is one frame read off the wire.
type inFrame struct {
	command string
	size    int          // bytes on the wire, header included
	msg     wire.Message // nil unless decoded
	// badChecksum: the payload was read but its checksum failed; Core drops
	// such a message and keeps the peer.
	badChecksum bool
	// dropped: a large frame that would have been decoded was discarded
	// because the server-wide receive budget was spent.
	dropped bool
	// release returns the receive budget the frame holds; call it once
	// the message has been handled. Never nil.
	release func()
}

func noRelease() {}

// frameReader reads one peer's frames. Payloads that are not decoded are
// discarded as they arrive; decoded payloads are buffered in chunks as they
// arrive, after the command's cap was checked against the header. Large
// frames are read under a deadline that grows with the bytes received
// (Config.MinRecvRate), so a slow sender cannot hold a buffer for long.
type frameReader struct {
	rd *bufio.Reader
	// setDeadline is the connection's SetReadDeadline (nil: no deadlines,
	// as in fuzzing).
	setDeadline func(time.Time) error
	net         wire.BitcoinNet
	hdr         [wireframe.HeaderSize]byte
	// recv is the server-wide receive budget for decoded large frames
	// (nil: unlimited).
	recv    *semaphore.Weighted
	minRate int64 // bytes per second; 0: large frames use the caller's deadline
	now     func() time.Time
}

// next reads one frame.
func (fr *frameReader) next(st readState) (inFrame, error) {
	if fr.setDeadline != nil {
		if err := fr.setDeadline(st.deadline); err != nil {
			return inFrame{release: noRelease}, err
		}
	}
	if _, err := io.ReadFull(fr.rd, fr.hdr[:]); err != nil {
		return inFrame{release: noRelease}, err
	}
	h, rule, err := parseFrameHeader(&fr.hdr, fr.net)
	if err != nil {
		return inFrame{command: h.command, release: noRelease}, err
	}
	f := inFrame{command: h.command, size: wireframe.HeaderSize + int(h.Length), release: noRelease}
	action := rule.action
	if rule.bloomOnly && !st.bloom {
		action = rule.withoutBloom
		if rule.whitelistIgnored && st.whitelisted {
			action = actionIgnore
		}
	}
	decode := action == actionDecode &&
		(!st.handshaking || rule.handshake) &&
		(!rule.relayOnly || st.relay)
	if action == actionForbidden && !st.handshaking {
		return f, bloomNotServed(h.command)
	}
	if decode && rule.bloomOnly && h.Length > rule.bloomMaxPayload {
		return f, misbehaving("%s payload of %d bytes over the cap of %d", h.command, h.Length, rule.bloomMaxPayload)
	}
	large := h.Length > maxSmallFrame
	if decode && large && fr.recv != nil {
		if fr.recv.TryAcquire(int64(h.Length)) {
			n := int64(h.Length)
			f.release = func() { fr.recv.Release(n) }
		} else {
			decode, f.dropped = false, true
		}
	}
	payload, err := fr.readPayload(h.Length, decode, large, st.deadline)
	if err != nil || !decode {
		f.release()
		f.release = noRelease
		return f, err
	}
	if wireframe.PayloadChecksum(payload) != h.Checksum {
		f.release()
		f.release = noRelease
		f.badChecksum = true
		return f, nil
	}
	if f.msg, err = decodePayload(h.command, payload, st.pver); err != nil {
		f.release()
		f.release = noRelease
	}
	return f, err
}

// readPayload reads n payload bytes, keeping them if keep. A large payload
// is read under a deadline of largeFrameGrace plus its bytes so far at
// minRate, never beyond the frame's deadline; the buffer of a kept one
// grows with what has arrived.
func (fr *frameReader) readPayload(n uint32, keep, large bool, frameDeadline time.Time) ([]byte, error) {
	var start time.Time
	if large && fr.minRate > 0 && fr.setDeadline != nil {
		start = fr.now()
	}
	var buf []byte
	if keep {
		buf = make([]byte, 0, min(n, payloadChunk))
	}
	for got := uint32(0); got < n; {
		chunk := min(n-got, payloadChunk)
		if !start.IsZero() {
			allowed := largeFrameGrace + time.Duration(float64(got+chunk)/float64(fr.minRate)*float64(time.Second))
			d := start.Add(allowed)
			if !frameDeadline.IsZero() && frameDeadline.Before(d) {
				d = frameDeadline
			}
			if err := fr.setDeadline(d); err != nil {
				return nil, err
			}
		}
		if !keep {
			if _, err := fr.rd.Discard(int(chunk)); err != nil {
				return nil, err
			}
			got += chunk
			continue
		}
		if cap(buf)-len(buf) < int(chunk) {
			grown := make([]byte, len(buf), min(int(n), max(2*cap(buf), len(buf)+int(chunk))))
			copy(grown, buf)
			buf = grown
		}
		if _, err := io.ReadFull(fr.rd, buf[len(buf):len(buf)+int(chunk)]); err != nil {
			return nil, err
		}
		buf = buf[:len(buf)+int(chunk)]
		got += chunk
	}
	return buf, nil
}

// encodeFrame serialises msg as a complete frame (header and payload).
func encodeFrame(msg wire.Message, pver uint32, net wire.BitcoinNet, enc wire.MessageEncoding) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := wire.WriteMessageWithEncodingN(&buf, msg, pver, net, enc); err != nil {
		return nil, fmt.Errorf("encode %s: %w", msg.Command(), err)
	}
	return buf.Bytes(), nil
}
