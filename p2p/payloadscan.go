package p2p

import (
	"encoding/binary"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// Sizes the pre-decode checks use: every declared count is checked against
// the bytes that remain, at the smallest size an element can have, before
// wire (or anything) allocates for it.
const (
	invVectSize = 4 + chainhash.HashSize
	// maxWireLocators is wire's MaxBlockLocatorsPerMsg: the most locator
	// hashes a getheaders frame may carry. More than maxLocatorSize (Core's
	// limit) is a request the server refuses, not a malformed message.
	maxWireLocators = wire.MaxBlockLocatorsPerMsg
)

// payloadScanner walks a payload with every read bounds-checked; it never
// allocates.
type payloadScanner struct {
	b   []byte
	off int
	cmd string
}

func (s *payloadScanner) remaining() int { return len(s.b) - s.off }

// fail returns the misbehaviour error of a malformed payload.
func (s *payloadScanner) fail(format string, args ...any) error {
	return misbehaving("malformed %s at byte %d: "+format, append([]any{s.cmd, s.off}, args...)...)
}

// skip advances n bytes.
func (s *payloadScanner) skip(n uint64, what string) error {
	if n > uint64(s.remaining()) {
		return s.fail("%s of %d bytes, %d remain", what, n, s.remaining())
	}
	s.off += int(n)
	return nil
}

// byte1 reads one byte.
func (s *payloadScanner) byte1(what string) (byte, error) {
	if s.remaining() < 1 {
		return 0, s.fail("no %s", what)
	}
	s.off++
	return s.b[s.off-1], nil
}

// varInt reads a CompactSize, rejecting non-canonical encodings as Core
// and wire do.
func (s *payloadScanner) varInt(what string) (uint64, error) {
	d, err := s.byte1(what)
	if err != nil {
		return 0, err
	}
	var n uint64
	var size int
	var min uint64
	switch d {
	case 0xfd:
		size, min = 2, 0xfd
	case 0xfe:
		size, min = 4, 0x10000
	case 0xff:
		size, min = 8, 0x100000000
	default:
		return uint64(d), nil
	}
	if s.remaining() < size {
		return 0, s.fail("truncated %s", what)
	}
	switch size {
	case 2:
		n = uint64(binary.LittleEndian.Uint16(s.b[s.off:]))
	case 4:
		n = uint64(binary.LittleEndian.Uint32(s.b[s.off:]))
	default:
		n = binary.LittleEndian.Uint64(s.b[s.off:])
	}
	s.off += size
	if n < min {
		return 0, s.fail("non-canonical %s", what)
	}
	return n, nil
}

// count reads a declared count of elements of at least elemMin bytes each
// and checks it against limit and against the bytes that remain.
func (s *payloadScanner) count(what string, elemMin int, limit uint64) (uint64, error) {
	n, err := s.varInt(what)
	if err != nil {
		return 0, err
	}
	if n > limit {
		return 0, s.fail("%d %s, limit %d", n, what, limit)
	}
	if n > uint64(s.remaining()/elemMin) {
		return 0, s.fail("%d %s of at least %d bytes each, %d bytes remain", n, what, elemMin, s.remaining())
	}
	return n, nil
}

// end checks that nothing follows.
func (s *payloadScanner) end() error {
	if s.remaining() != 0 {
		return s.fail("%d trailing bytes", s.remaining())
	}
	return nil
}

// checkDeclaredCounts validates the counts of the variable-length messages
// the server hands to wire, so that wire's decoders, which allocate from
// declared counts, never allocate more than the payload can hold. It wraps
// ErrMisbehaving. (tx is not handed to wire at all: see scanTx.)
func checkDeclaredCounts(command string, payload []byte) error {
	s := payloadScanner{b: payload, cmd: command}
	switch command {
	case wire.CmdInv, wire.CmdGetData, wire.CmdNotFound:
		n, err := s.count("inventory entries", invVectSize, wire.MaxInvPerMsg)
		if err != nil {
			return err
		}
		if err := s.skip(n*invVectSize, "inventory"); err != nil {
			return err
		}
		return s.end()
	case wire.CmdVersion:
		// wire reads the user agent's declared length into a new buffer
		// before it checks it; the fields before it are optional in the
		// order wire reads them.
		if err := s.skip(4+8+8+26, "version, services, time and address"); err != nil {
			return err
		}
		for _, f := range []struct {
			n    uint64
			what string
		}{{26, "sender address"}, {8, "nonce"}} {
			if s.remaining() == 0 {
				return nil
			}
			if err := s.skip(f.n, f.what); err != nil {
				return err
			}
		}
		if s.remaining() == 0 {
			return nil
		}
		_, err := s.count("user agent bytes", 1, wire.MaxUserAgentLen)
		return err
	case wire.CmdFilterLoad, wire.CmdFilterAdd:
		// wire allocates the declared filter or element length (up to
		// its own maximum) before reading it.
		n, err := s.count("bytes", 1, uint64(len(payload)))
		if err != nil {
			return err
		}
		return s.skip(n, "filter data")
	case wire.CmdGetHeaders, wire.CmdGetBlocks:
		if err := s.skip(4, "version"); err != nil {
			return err
		}
		n, err := s.count("locator hashes", chainhash.HashSize, maxWireLocators)
		if err != nil {
			return err
		}
		if err := s.skip(n*chainhash.HashSize+chainhash.HashSize, "locator and stop hash"); err != nil {
			return err
		}
		return s.end()
	}
	return nil
}
