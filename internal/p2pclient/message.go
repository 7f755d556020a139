package p2pclient

import (
	"bytes"
	"fmt"
	"io"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// KeepPings makes ReadFrame, ReadRaw, Skip and ReadMessage return the
// peer's pings instead of answering them: for tests of a client that
// falls silent.
func (c *Conn) KeepPings(keep bool) { c.keepPings = keep }

// ReadMessage reads the next frame of any command, as ReadFrame with an
// empty keep-list does (length capped by MaxPayload, checksum verified,
// pings answered), and decodes it with wire. Declared counts of the
// messages wire would allocate for are first checked against the payload
// (checkCounts). A frame wire cannot decode (an unknown command, a
// malformed payload) is an error after which the next frame can be read;
// a failed read is not.
func (c *Conn) ReadMessage() (wire.Message, error) {
	f, err := c.ReadFrame()
	if err != nil {
		return nil, err
	}
	if err := checkCounts(f.Command, f.Payload); err != nil {
		return nil, err
	}
	// wire makes the empty message of a command only inside its frame
	// reader: hand it the frame again (ReadFrame kept the header in hdr;
	// over v2 the header is made up, with the checksum wire checks).
	if c.v2 != nil {
		c.putHeader(f.Command, f.Payload, true)
	}
	r := io.MultiReader(bytes.NewReader(c.hdr[:]), bytes.NewReader(f.Payload))
	_, m, _, err := wire.ReadMessageWithEncodingN(r, c.pver, c.net, wire.WitnessEncoding)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", f.Command, err)
	}
	return m, nil
}

// checkCounts checks the declared counts and string lengths of the
// messages whose decoders allocate from them before reading their items
// (wire caps the counts at fixed maxima, far above what a small payload
// holds).
func checkCounts(cmd string, b []byte) error {
	const hash = chainhash.HashSize
	switch cmd {
	case wire.CmdTx:
		return checkTx(b)
	case wire.CmdBlock:
		return checkBlock(b)
	case wire.CmdInv, wire.CmdGetData, wire.CmdNotFound:
		return checkList(b, 0, 4+hash)
	case wire.CmdHeaders:
		return checkList(b, 0, wire.MaxBlockHeaderPayload+1)
	case wire.CmdGetHeaders, wire.CmdGetBlocks:
		return checkList(b, 4, hash)
	case wire.CmdMerkleBlock:
		return checkList(b, wire.MaxBlockHeaderPayload+4, hash)
	case wire.CmdCFHeaders:
		return checkList(b, 1+2*hash, hash)
	case wire.CmdCFCheckpt:
		return checkList(b, 1+hash, hash)
	case wire.CmdCFilter:
		return checkList(b, 1+hash, 1)
	case wire.CmdAddr:
		return checkList(b, 0, 30) // time, services, address, port
	case wire.CmdAddrV2:
		return checkList(b, 0, 9) // time, services, network id, empty address, port
	case wire.CmdFilterLoad, wire.CmdFilterAdd:
		return checkList(b, 0, 1)
	case wire.CmdReject:
		return checkStrings(b, 0, 2) // command, reason
	case wire.CmdVersion:
		// Version, services, time, two addresses, nonce; then the user
		// agent (absent from very old versions).
		if len(b) <= 80 {
			return nil
		}
		return checkStrings(b, 80, 1)
	}
	return nil
}

// checkStrings checks n CompactSize-prefixed strings after a fixed prefix
// against the bytes that remain.
func checkStrings(b []byte, prefix, n int) error {
	r := wirescan.NewCountReader(b)
	err := r.Skip(prefix)
	for i := 0; err == nil && i < n && r.Len() > 0; i++ {
		_, err = r.Bytes()
	}
	if err != nil {
		return fmt.Errorf("%w: at byte %d: %v", ErrProtocol, r.Offset(), err)
	}
	return nil
}
