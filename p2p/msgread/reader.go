package msgread

import (
	"bufio"
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
	// MaxLocatorSize is Core's MAX_LOCATOR_SZ; a getheaders with more
	// locator hashes is refused (disconnect without penalty, as Core).
	MaxLocatorSize = 101
	// maxGetHeadersPayload is a getheaders with wire's maximum of locator
	// hashes; above MaxLocatorSize the request is refused after decoding.
	maxGetHeadersPayload = 4 + 3 + maxWireLocators*chainhash.HashSize + chainhash.HashSize
	// maxInvPayload is an inv or getdata with wire.MaxInvPerMsg entries
	// (Core's MAX_INV_SZ).
	maxInvPayload = 9 + wire.MaxInvPerMsg*InvVectSize
	// maxFilterLoadPayload is a filterload of Core's largest filter
	// (36,000 bytes: a 3-byte CompactSize), k, tweak and flags; a larger
	// frame carries a filter Core refuses as misbehaviour too.
	maxFilterLoadPayload = 3 + bloom.MaxFilterSize + 4 + 4 + 1
	// maxFilterAddPayload is a filteradd of Core's largest element (520
	// bytes).
	maxFilterAddPayload = 3 + bloom.MaxFilterAddSize

	// MaxSmallFrame is the largest payload read under the idle deadline
	// into a buffer of the peer's own. A larger ("large") frame is read
	// under a minimum transfer rate, and a large frame that is decoded
	// takes its bytes from the server-wide receive budget
	// (Config.RecvBudget) first.
	MaxSmallFrame = 16 << 10
	// LargeFrameGrace is the time a large frame gets on top of its size at
	// Config.MinRecvRate.
	LargeFrameGrace = 5 * time.Second
	// DecodedFactor bounds a decoded message, and what a handler derives
	// from it (a getdata's notfound list), as a multiple of its payload,
	// once declared counts are checked against the payload.
	DecodedFactor = 4
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
	rule := ruleOf(h.command)
	if h.Length > rule.maxPayload {
		return h, rule, misbehaving("%s payload of %d bytes over the cap of %d", h.command, h.Length, rule.maxPayload)
	}
	return h, rule, nil
}

// decides says whether a message of command with a payload of length
// bytes, which passed the command's cap, is to be decoded in state st, or
// refused: a BIP-37 message without serving (*NotServedError) or over
// BIP-37's tighter cap (misbehaviour).
func (rule commandRule) decides(command string, length uint32, st State) (bool, error) {
	action := rule.action
	if rule.bloomOnly && !st.Bloom {
		action = rule.withoutBloom
		if rule.whitelistIgnored && st.Whitelisted {
			action = actionIgnore
		}
	}
	decode := action == actionDecode &&
		(!st.Handshaking || rule.handshake) &&
		(!rule.relayOnly || st.Relay)
	if action == actionForbidden && !st.Handshaking {
		return false, &NotServedError{Command: command}
	}
	if decode && rule.bloomOnly && length > rule.bloomMaxPayload {
		return false, misbehaving("%s payload of %d bytes over the cap of %d", command, length, rule.bloomMaxPayload)
	}
	return decode, nil
}

// ruleOf returns the rule of command: its own, or the generic one of the
// commands the server ignores.
func ruleOf(command string) commandRule {
	rule, ok := commandRules[command]
	if !ok {
		rule = commandRule{maxPayload: maxFramePayload, action: actionIgnore}
	}
	return rule
}

// Known reports whether the reader treats cmd as a command of its own
// (not one it ignores as unknown).
func Known(cmd string) bool {
	_, ok := commandRules[cmd]
	return ok
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

// State is what the reader needs to know of the connection to treat a
// frame.
type State struct {
	PVer uint32
	// Handshaking: verack not yet received.
	Handshaking bool
	// Relay: transaction relay is on (tx, inv and notfound are decoded).
	Relay bool
	// Bloom: BIP-37 serving is on; Whitelisted: the peer is whitelisted.
	Bloom, Whitelisted bool
	// Deadline bounds the whole frame (the idle or handshake deadline);
	// zero: none. A large frame's rate deadline never extends it.
	Deadline time.Time
}

// Frame is one frame read off the wire.
type Frame struct {
	Command string
	// Size is the frame's bytes read off the wire, header included: its
	// declared size once the payload arrived, less when the peer stopped
	// or was refused before sending it all.
	Size int
	Msg  wire.Message // nil unless decoded
	// BadChecksum: the payload was read but its checksum failed; Core drops
	// such a message and keeps the peer.
	BadChecksum bool
	// Dropped: a large frame that would have been decoded was discarded
	// because the server-wide receive budget was spent.
	Dropped bool
	// Release returns the receive budget the frame holds; call it once
	// the message has been handled. Never nil.
	Release func()
}

func noRelease() {}

// Reader reads one peer's frames. Payloads that are not decoded are
// discarded as they arrive; decoded payloads are buffered in chunks as they
// arrive, after the command's cap was checked against the header. Large
// frames are read under a deadline that grows with the bytes received
// (MinRate), so a slow sender cannot hold a buffer for long.
type Reader struct {
	R *bufio.Reader
	// SetDeadline is the connection's SetReadDeadline (nil: no deadlines,
	// as in fuzzing).
	SetDeadline func(time.Time) error
	Net         wire.BitcoinNet
	// Recv is the server-wide receive budget for decoded large frames
	// (nil: unlimited).
	Recv    *semaphore.Weighted
	MinRate int64 // bytes per second; 0: large frames use the caller's deadline
	Now     func() time.Time
	hdr     [wireframe.HeaderSize]byte
}

// Next reads one frame.
func (fr *Reader) Next(st State) (Frame, error) {
	if fr.SetDeadline != nil {
		if err := fr.SetDeadline(st.Deadline); err != nil {
			return Frame{Release: noRelease}, err
		}
	}
	if _, err := io.ReadFull(fr.R, fr.hdr[:]); err != nil {
		return Frame{Release: noRelease}, err
	}
	h, rule, err := parseFrameHeader(&fr.hdr, fr.Net)
	if err != nil {
		return Frame{Command: h.command, Size: wireframe.HeaderSize, Release: noRelease}, err
	}
	f := Frame{Command: h.command, Size: wireframe.HeaderSize, Release: noRelease}
	decode, err := rule.decides(h.command, h.Length, st)
	if err != nil {
		return f, err
	}
	large := h.Length > MaxSmallFrame
	if decode && large && fr.Recv != nil {
		if fr.Recv.TryAcquire(int64(h.Length)) {
			n := int64(h.Length)
			f.Release = func() { fr.Recv.Release(n) }
		} else {
			decode, f.Dropped = false, true
		}
	}
	payload, got, err := fr.readPayload(h.Length, decode, large, st.Deadline)
	f.Size += int(got)
	if err != nil || !decode {
		f.Release()
		f.Release = noRelease
		return f, err
	}
	if wireframe.PayloadChecksum(payload) != h.Checksum {
		f.Release()
		f.Release = noRelease
		f.BadChecksum = true
		return f, nil
	}
	if f.Msg, err = DecodePayload(h.command, payload, st.PVer); err != nil {
		f.Release()
		f.Release = noRelease
	}
	return f, err
}

// readPayload reads n payload bytes, keeping them if keep, and returns how
// many it read (n unless it failed). A large payload
// is read under a deadline of LargeFrameGrace plus its bytes so far at
// minRate, never beyond the frame's deadline; the buffer of a kept one
// grows with what has arrived.
func (fr *Reader) readPayload(n uint32, keep, large bool, frameDeadline time.Time) (payload []byte, got uint32, err error) {
	var start time.Time
	if large && fr.MinRate > 0 && fr.SetDeadline != nil {
		start = fr.Now()
	}
	var buf []byte
	if keep {
		buf = make([]byte, 0, min(n, payloadChunk))
	}
	for got < n {
		chunk := min(n-got, payloadChunk)
		if !start.IsZero() {
			allowed := LargeFrameGrace + time.Duration(float64(got+chunk)/float64(fr.MinRate)*float64(time.Second))
			d := start.Add(allowed)
			if !frameDeadline.IsZero() && frameDeadline.Before(d) {
				d = frameDeadline
			}
			if err := fr.SetDeadline(d); err != nil {
				return nil, got, err
			}
		}
		if !keep {
			k, err := fr.R.Discard(int(chunk))
			got += uint32(k)
			if err != nil {
				return nil, got, err
			}
			continue
		}
		if cap(buf)-len(buf) < int(chunk) {
			grown := make([]byte, len(buf), min(int(n), max(2*cap(buf), len(buf)+int(chunk))))
			copy(grown, buf)
			buf = grown
		}
		k, err := io.ReadFull(fr.R, buf[len(buf):len(buf)+int(chunk)])
		got += uint32(k)
		if err != nil {
			return nil, got, err
		}
		buf = buf[:len(buf)+int(chunk)]
	}
	return buf, got, nil
}
