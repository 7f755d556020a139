package p2p

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Message size limits, checked against the length in a frame header before
// anything is allocated for the payload.
const (
	frameHeaderSize = 24
	// maxFramePayload is Core's MAX_PROTOCOL_MESSAGE_LENGTH: larger frames
	// of any command disconnect the peer.
	maxFramePayload = 4_000_000
	// maxLocatorSize is Core's MAX_LOCATOR_SZ; a getheaders with more
	// locator hashes disconnects the peer.
	maxLocatorSize = 101
	// maxGetHeadersPayload is a getheaders with maxLocatorSize hashes.
	maxGetHeadersPayload = 4 + 3 + maxLocatorSize*chainhash.HashSize + chainhash.HashSize
	// maxInvPayload is an inv or getdata with wire.MaxInvPerMsg entries
	// (Core's MAX_INV_SZ).
	maxInvPayload = 9 + wire.MaxInvPerMsg*(4+chainhash.HashSize)
	// invTypeWTx is BIP-339's MSG_WTX, which btcd's wire does not name.
	invTypeWTx wire.InvType = 5
)

// frameAction says what the reader does with a frame's payload.
type frameAction int

const (
	// actionDecode: read, checksum and decode the payload, then dispatch.
	actionDecode frameAction = iota
	// actionIgnore: discard the payload unread (no allocation).
	actionIgnore
	// actionForbidden: a message this server never accepts (BIP-37 bloom
	// filtering, mempool), which Core answers with a disconnect when
	// NODE_BLOOM is not offered.
	actionForbidden
)

// commandRule is the payload cap and the action for one command.
type commandRule struct {
	maxPayload uint32
	action     frameAction
}

// commandRules holds the commands the server reads. Commands not listed are
// discarded with the generic cap maxFramePayload, as Core ignores unknown
// messages.
var commandRules = map[string]commandRule{
	wire.CmdVersion:      {400, actionDecode},
	wire.CmdVerAck:       {0, actionDecode},
	wire.CmdSendAddrV2:   {0, actionDecode},
	wire.CmdWTxIdRelay:   {0, actionDecode},
	wire.CmdSendHeaders:  {0, actionDecode},
	wire.CmdFeeFilter:    {8, actionDecode},
	wire.CmdPing:         {8, actionDecode},
	wire.CmdPong:         {8, actionDecode},
	wire.CmdGetAddr:      {0, actionDecode},
	wire.CmdGetHeaders:   {maxGetHeadersPayload, actionDecode},
	wire.CmdGetCFilters:  {1 + 4 + chainhash.HashSize, actionDecode},
	wire.CmdGetCFHeaders: {1 + 4 + chainhash.HashSize, actionDecode},
	wire.CmdGetCFCheckpt: {1 + chainhash.HashSize, actionDecode},
	wire.CmdGetData:      {maxInvPayload, actionDecode},
	wire.CmdInv:          {maxInvPayload, actionDecode},
	wire.CmdNotFound:     {maxInvPayload, actionDecode},
	wire.CmdTx:           {maxFramePayload, actionDecode},
	wire.CmdFilterLoad:   {maxFramePayload, actionForbidden},
	wire.CmdFilterAdd:    {maxFramePayload, actionForbidden},
	wire.CmdFilterClear:  {maxFramePayload, actionForbidden},
	wire.CmdMemPool:      {maxFramePayload, actionForbidden},
}

// frameHeader is the 24-byte P2P v1 message header.
type frameHeader struct {
	magic    wire.BitcoinNet
	command  string
	length   uint32
	checksum [4]byte
}

// parseFrameHeader decodes and validates a header: magic, a command of
// printable ASCII padded with NULs, and the payload cap of the command.
func parseFrameHeader(b *[frameHeaderSize]byte, net wire.BitcoinNet) (frameHeader, commandRule, error) {
	h := frameHeader{
		magic:  wire.BitcoinNet(binary.LittleEndian.Uint32(b[0:4])),
		length: binary.LittleEndian.Uint32(b[16:20]),
	}
	copy(h.checksum[:], b[20:24])
	if h.magic != net {
		return h, commandRule{}, misbehaving("wrong network magic %08x", uint32(h.magic))
	}
	cmd := b[4:16]
	n := bytes.IndexByte(cmd, 0)
	if n < 0 {
		n = len(cmd)
	}
	for i, c := range cmd {
		if i < n && (c < 0x20 || c > 0x7e) || i >= n && c != 0 {
			return h, commandRule{}, misbehaving("malformed command %q", cmd)
		}
	}
	h.command = string(cmd[:n])
	rule, ok := commandRules[h.command]
	if !ok {
		rule = commandRule{maxFramePayload, actionIgnore}
	}
	if h.length > rule.maxPayload {
		return h, rule, misbehaving("%s payload of %d bytes over the cap of %d", h.command, h.length, rule.maxPayload)
	}
	return h, rule, nil
}

// inFrame is one frame read off the wire.
type inFrame struct {
	command string
	size    int          // bytes on the wire, header included
	msg     wire.Message // nil unless decoded
	// badChecksum: the payload was read but its checksum failed; Core drops
	// such a message and keeps the peer.
	badChecksum bool
}

// readFrame reads one frame. Payloads of ignored commands are discarded
// without allocation; decoded ones are allocated only after the cap check.
func readFrame(r io.Reader, net wire.BitcoinNet, pver uint32, hdr *[frameHeaderSize]byte) (inFrame, error) {
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return inFrame{}, err
	}
	h, rule, err := parseFrameHeader(hdr, net)
	if err != nil {
		return inFrame{}, err
	}
	f := inFrame{command: h.command, size: frameHeaderSize + int(h.length)}
	switch rule.action {
	case actionForbidden:
		return f, misbehaving("%s is not served (no NODE_BLOOM)", h.command)
	case actionIgnore:
		if _, err := io.CopyN(io.Discard, r, int64(h.length)); err != nil {
			return f, err
		}
		return f, nil
	}
	payload := make([]byte, h.length)
	if _, err := io.ReadFull(r, payload); err != nil {
		return f, err
	}
	if !bytes.Equal(chainhash.DoubleHashB(payload)[:4], h.checksum[:]) {
		f.badChecksum = true
		return f, nil
	}
	f.msg, err = decodePayload(h.command, payload, pver)
	return f, err
}

// decodePayload decodes the payload of a command in commandRules with action
// actionDecode. The whole payload must be consumed (but see version).
func decodePayload(command string, payload []byte, pver uint32) (wire.Message, error) {
	var msg wire.Message
	switch command {
	case wire.CmdVersion:
		msg = &wire.MsgVersion{}
	case wire.CmdVerAck:
		msg = &wire.MsgVerAck{}
	case wire.CmdSendAddrV2:
		msg = &wire.MsgSendAddrV2{}
	case wire.CmdWTxIdRelay:
		msg = &wire.MsgWTxIdRelay{}
	case wire.CmdSendHeaders:
		msg = &wire.MsgSendHeaders{}
	case wire.CmdFeeFilter:
		msg = &wire.MsgFeeFilter{}
	case wire.CmdPing:
		msg = &wire.MsgPing{}
	case wire.CmdPong:
		msg = &wire.MsgPong{}
	case wire.CmdGetAddr:
		msg = &wire.MsgGetAddr{}
	case wire.CmdGetHeaders:
		msg = &wire.MsgGetHeaders{}
	case wire.CmdGetCFilters:
		msg = &wire.MsgGetCFilters{}
	case wire.CmdGetCFHeaders:
		msg = &wire.MsgGetCFHeaders{}
	case wire.CmdGetCFCheckpt:
		msg = &wire.MsgGetCFCheckpt{}
	case wire.CmdGetData:
		msg = &wire.MsgGetData{}
	case wire.CmdInv:
		msg = &wire.MsgInv{}
	case wire.CmdNotFound:
		msg = &wire.MsgNotFound{}
	case wire.CmdTx:
		msg = &wire.MsgTx{}
	default:
		return nil, fmt.Errorf("decode %s: %w", command, errors.ErrUnsupported)
	}
	buf := bytes.NewBuffer(payload) // MsgVersion needs a *bytes.Buffer
	if err := msg.BtcDecode(buf, pver, wire.WitnessEncoding); err != nil {
		return nil, misbehaving("malformed %s: %v", command, err)
	}
	// Trailing bytes are malformed, except in version, where Core reads
	// the fields it knows and ignores any later extension.
	if buf.Len() != 0 && command != wire.CmdVersion {
		return nil, misbehaving("%s has %d trailing bytes", command, buf.Len())
	}
	return msg, nil
}

// encodeFrame serialises msg as a complete frame (header and payload).
func encodeFrame(msg wire.Message, pver uint32, net wire.BitcoinNet, enc wire.MessageEncoding) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := wire.WriteMessageWithEncodingN(&buf, msg, pver, net, enc); err != nil {
		return nil, fmt.Errorf("encode %s: %w", msg.Command(), err)
	}
	return buf.Bytes(), nil
}
