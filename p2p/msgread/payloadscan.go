package msgread

import (
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// Sizes the pre-decode checks use: every declared count is checked against
// the bytes that remain, at the smallest size an element can have, before
// wire (or anything) allocates for it.
const (
	InvVectSize = 4 + chainhash.HashSize
	// maxWireLocators is wire's MaxBlockLocatorsPerMsg: the most locator
	// hashes a getheaders frame may carry. More than MaxLocatorSize (Core's
	// limit) is a request the server refuses, not a malformed message.
	maxWireLocators = wire.MaxBlockLocatorsPerMsg
)

// payloadScanner walks a payload in place (wirescan.Reader) and turns what
// is malformed into misbehaviour, naming the command, the byte and the
// field; it never allocates unless the payload is malformed.
type payloadScanner struct {
	r   wirescan.Reader
	cmd string
}

// fail returns the misbehaviour error of a malformed payload.
func (s *payloadScanner) fail(format string, args ...any) error {
	return misbehaving("malformed %s at byte %d: "+format, append([]any{s.cmd, s.r.Offset()}, args...)...)
}

// skip advances n bytes.
func (s *payloadScanner) skip(n uint64, what string) error {
	if n > uint64(s.r.Len()) {
		return s.fail("%s of %d bytes, %d remain", what, n, s.r.Len())
	}
	return s.r.Skip(int(n))
}

// count reads a declared count of elements of at least elemMin bytes each
// and checks it against the bytes that remain and against limit.
func (s *payloadScanner) count(what string, elemMin int, limit uint64) (uint64, error) {
	n, err := s.r.Count(elemMin)
	if err != nil {
		return 0, s.fail("%s: %v", what, err)
	}
	if uint64(n) > limit {
		return 0, s.fail("%d %s, limit %d", n, what, limit)
	}
	return uint64(n), nil
}

// end checks that nothing follows.
func (s *payloadScanner) end() error {
	if s.r.Len() != 0 {
		return s.fail("%d trailing bytes", s.r.Len())
	}
	return nil
}

// checkDeclaredCounts validates the counts of the variable-length messages
// the server hands to wire, so that wire's decoders, which allocate from
// declared counts, never allocate more than the payload can hold. It wraps
// ErrMisbehaving. (tx is not handed to wire at all: see scanTx.)
func checkDeclaredCounts(command string, payload []byte) error {
	s := payloadScanner{r: wirescan.NewReader(payload), cmd: command}
	switch command {
	case wire.CmdInv, wire.CmdGetData, wire.CmdNotFound:
		n, err := s.count("inventory entries", InvVectSize, wire.MaxInvPerMsg)
		if err != nil {
			return err
		}
		if err := s.skip(n*InvVectSize, "inventory"); err != nil {
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
			if s.r.Len() == 0 {
				return nil
			}
			if err := s.skip(f.n, f.what); err != nil {
				return err
			}
		}
		if s.r.Len() == 0 {
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

// InvTypeWTx is BIP-339's MSG_WTX, which btcd's wire does not name.
const InvTypeWTx wire.InvType = 5
