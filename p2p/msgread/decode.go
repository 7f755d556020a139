package msgread

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/wire/v2"
)

// DecodePayload decodes the payload of a command in commandRules with action
// actionDecode. Declared counts are checked against the payload first
// (checkDeclaredCounts), so wire never allocates more than the payload can
// hold; tx is checked and kept raw (scanTx), never decoded into wire.MsgTx.
// The whole payload must be consumed (but see version). Errors wrap
// ErrMisbehaving, or errors.ErrUnsupported for a command not decoded here.
func DecodePayload(command string, payload []byte, pver uint32) (wire.Message, error) {
	var msg wire.Message
	switch command {
	case wire.CmdTx:
		return decodeRawTx(payload)
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
	case wire.CmdFilterLoad:
		msg = &wire.MsgFilterLoad{}
	case wire.CmdFilterAdd:
		msg = &wire.MsgFilterAdd{}
	case wire.CmdFilterClear:
		msg = &wire.MsgFilterClear{}
	case wire.CmdMemPool:
		msg = &wire.MsgMemPool{}
	case wire.CmdGetBlocks:
		msg = &wire.MsgGetBlocks{}
	default:
		return nil, fmt.Errorf("decode %s: %w", command, errors.ErrUnsupported)
	}
	if err := checkDeclaredCounts(command, payload); err != nil {
		return nil, err
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
