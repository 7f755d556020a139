package p2p

import (
	"crypto/sha256"
	"fmt"
	"io"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Smallest serialisations, the unit declared counts are checked in.
const (
	minTxInSize        = 32 + 4 + 1 + 4 // outpoint, empty script, sequence
	minTxOutSize       = 8 + 1          // value, empty script
	minWitnessItemSize = 1              // an empty item's length byte
)

// rawTx is a transaction as a peer sent it: its serialisation (with
// witnesses) and its txid and wtxid, checked by scanTx. The server only
// passes transactions on to the node, so it never decodes them into
// wire.MsgTx: the raw bytes are what sendrawtransaction wants, and a
// structure check plus two hashes cost no allocation per input, output or
// witness item, however many the peer declares.
type rawTx struct {
	raw         []byte
	txid, wtxid chainhash.Hash
}

var _ wire.Message = (*rawTx)(nil)

// Command implements wire.Message.
func (t *rawTx) Command() string { return wire.CmdTx }

// MaxPayloadLength implements wire.Message.
func (t *rawTx) MaxPayloadLength(uint32) uint32 { return maxFramePayload }

// BtcDecode reads a whole serialised transaction from r and checks it with
// scanTx; the server calls decodeRawTx on the frame's payload instead.
func (t *rawTx) BtcDecode(r io.Reader, _ uint32, _ wire.MessageEncoding) error {
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
func (t *rawTx) BtcEncode(w io.Writer, _ uint32, _ wire.MessageEncoding) error {
	_, err := w.Write(t.raw)
	return err
}

// decodeRawTx checks payload with scanTx and keeps it (not copied).
func decodeRawTx(payload []byte) (*rawTx, error) {
	txid, wtxid, err := scanTx(payload)
	if err != nil {
		return nil, err
	}
	return &rawTx{raw: payload, txid: txid, wtxid: wtxid}, nil
}

// scanTx checks that payload is exactly one transaction in the wire format
// wire.MsgTx decodes (BIP-144 marker and flag, canonical CompactSizes, no
// trailing bytes, a witness flag only with some witness), with every count
// checked against the bytes that remain, and returns its txid and wtxid.
// It reads the payload in place and allocates nothing that depends on the
// payload.
func scanTx(payload []byte) (txid, wtxid chainhash.Hash, err error) {
	s := payloadScanner{b: payload, cmd: wire.CmdTx}
	if err := s.skip(4, "version"); err != nil {
		return txid, wtxid, err
	}
	bodyStart := s.off
	nIn, err := s.varInt("input count")
	if err != nil {
		return txid, wtxid, err
	}
	segwit := false
	if nIn == 0 {
		// BIP-144: a zero input count is the marker; the flag must be 1.
		flag, err := s.byte1("witness flag")
		if err != nil {
			return txid, wtxid, err
		}
		if flag != wire.WitnessFlag {
			return txid, wtxid, s.fail("witness flag %#x", flag)
		}
		segwit = true
		bodyStart = s.off
		if nIn, err = s.varInt("input count"); err != nil {
			return txid, wtxid, err
		}
	}
	if nIn > uint64(s.remaining()/minTxInSize) {
		return txid, wtxid, s.fail("%d inputs of at least %d bytes each, %d bytes remain", nIn, minTxInSize, s.remaining())
	}
	for i := uint64(0); i < nIn; i++ {
		if err := s.skip(36, "outpoint"); err != nil {
			return txid, wtxid, err
		}
		n, err := s.varInt("signature script length")
		if err != nil {
			return txid, wtxid, err
		}
		if err := s.skip(n, "signature script"); err != nil {
			return txid, wtxid, err
		}
		if err := s.skip(4, "sequence"); err != nil {
			return txid, wtxid, err
		}
	}
	nOut, err := s.count("outputs", minTxOutSize, uint64(len(payload)))
	if err != nil {
		return txid, wtxid, err
	}
	for i := uint64(0); i < nOut; i++ {
		if err := s.skip(8, "value"); err != nil {
			return txid, wtxid, err
		}
		n, err := s.varInt("public key script length")
		if err != nil {
			return txid, wtxid, err
		}
		if err := s.skip(n, "public key script"); err != nil {
			return txid, wtxid, err
		}
	}
	bodyEnd := s.off
	if segwit {
		anyWitness := false
		for i := uint64(0); i < nIn; i++ {
			items, err := s.count("witness items", minWitnessItemSize, uint64(len(payload)))
			if err != nil {
				return txid, wtxid, err
			}
			anyWitness = anyWitness || items > 0
			for j := uint64(0); j < items; j++ {
				n, err := s.varInt("witness item length")
				if err != nil {
					return txid, wtxid, err
				}
				if err := s.skip(n, "witness item"); err != nil {
					return txid, wtxid, err
				}
			}
		}
		if !anyWitness {
			return txid, wtxid, s.fail("witness flag without witnesses")
		}
	}
	lockStart := s.off
	if err := s.skip(4, "lock time"); err != nil {
		return txid, wtxid, err
	}
	if err := s.end(); err != nil {
		return txid, wtxid, err
	}

	wtxid = chainhash.DoubleHashH(payload)
	if !segwit {
		return wtxid, wtxid, nil
	}
	// The txid commits to the serialisation without marker, flag and
	// witnesses: version, inputs and outputs, lock time.
	h := sha256.New()
	h.Write(payload[:4])
	h.Write(payload[bodyStart:bodyEnd])
	h.Write(payload[lockStart:])
	var first [sha256.Size]byte
	h.Sum(first[:0])
	return chainhash.Hash(sha256.Sum256(first[:])), wtxid, nil
}
