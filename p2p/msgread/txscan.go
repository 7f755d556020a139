package msgread

import (
	"fmt"
	"io"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// RawTx is a transaction as a peer sent it: its serialisation (with
// witnesses) and its txid and wtxid, checked by scanTx. The server only
// passes transactions on to the node, so it never decodes them into
// wire.MsgTx: the raw bytes are what sendrawtransaction wants, and a
// structure check plus two hashes cost no allocation per input, output or
// witness item, however many the peer declares.
type RawTx struct {
	// Raw is the serialised transaction as received (witnesses included),
	// a slice of the frame's payload.
	Raw []byte
	// TxID and WTxID are its ids.
	TxID, WTxID chainhash.Hash
}

var _ wire.Message = (*RawTx)(nil)

// Command implements wire.Message.
func (t *RawTx) Command() string { return wire.CmdTx }

// MaxPayloadLength implements wire.Message.
func (t *RawTx) MaxPayloadLength(uint32) uint32 { return maxFramePayload }

// BtcDecode reads a whole serialised transaction from r and checks it with
// scanTx; the server calls decodeRawTx on the frame's payload instead.
func (t *RawTx) BtcDecode(r io.Reader, _ uint32, _ wire.MessageEncoding) error {
	raw, err := io.ReadAll(io.LimitReader(r, maxFramePayload+1))
	if err != nil {
		return err
	}
	if len(raw) > maxFramePayload {
		return fmt.Errorf("tx over %d bytes", maxFramePayload)
	}
	got, err := decodeRawTx(raw)
	if err != nil {
		return err
	}
	*t = *got
	return nil
}

// BtcEncode writes the transaction as received (witnesses included).
func (t *RawTx) BtcEncode(w io.Writer, _ uint32, _ wire.MessageEncoding) error {
	_, err := w.Write(t.Raw)
	return err
}

// decodeRawTx checks payload with scanTx and keeps it (not copied).
func decodeRawTx(payload []byte) (*RawTx, error) {
	txid, wtxid, err := scanTx(payload)
	if err != nil {
		return nil, err
	}
	return &RawTx{Raw: payload, TxID: txid, WTxID: wtxid}, nil
}

// scanTx checks that payload is exactly one transaction in the wire format
// wire.MsgTx decodes (BIP-144 marker and flag, canonical CompactSizes, no
// trailing bytes, a witness flag only with some witness), with every count
// checked against the bytes that remain (wirescan.Reader), and returns its
// txid and wtxid. It reads the payload in place and allocates nothing that
// depends on the payload. Errors wrap ErrMisbehaving.
func scanTx(payload []byte) (txid, wtxid chainhash.Hash, err error) {
	r := wirescan.NewReader(payload)
	t, err := r.Tx(nil, nil)
	if err == nil {
		err = r.End()
	}
	if err != nil {
		return txid, wtxid, misbehaving("malformed %s at byte %d: %v", wire.CmdTx, r.Offset(), err)
	}
	txid = r.TxID(t)
	if !t.Witness {
		return txid, txid, nil
	}
	return txid, r.WTxID(t), nil
}
