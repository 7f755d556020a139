package nodeclient

import (
	"errors"

	"github.com/cfindexd/cfindexd/internal/jsonscan"
)

// The replies that carry a whole block or transaction — getblock <hash> 0
// and getrawtransaction <txid> 0 — are one JSON string of hex, megabytes
// long for a full block. encoding/json validates and copies that string
// byte by byte and then hex.DecodeString copies it again, a large share of
// a catch-up's CPU. The scanner below recognises the envelope Core and btcd actually send,
//
//	{"result":"<hex>","error":null,"id":7}             (Core)
//	{"jsonrpc":"1.0","result":"<hex>","error":null,"id":7} (btcd)
//
// (members in any order, any JSON whitespace) and returns the hex digits
// in place, to be decoded into a reused buffer, read by the module's one
// JSON scanner (internal/jsonscan) over the whole body. It is deliberately
// strict: anything else — an error object, a null or escaped result, an
// unknown or repeated member, a string id — is "not recognised", and the
// caller decodes the same bytes with encoding/json instead, so every
// unusual reply keeps exactly the old behaviour. FuzzScanHexReply checks
// that whatever the scanner accepts, encoding/json reads the same way.

// hexReply is one recognised reply: the hex digits of its result (a
// sub-slice of the body) and its id.
type hexReply struct {
	hex   []byte
	id    uint64
	hasID bool
}

// scanHexReply recognises a single reply object spanning all of body.
func scanHexReply(body []byte) (hexReply, bool) {
	var s jsonscan.Scanner
	s.Reset(nil, body)
	rep, ok := scanReplyObject(&s)
	if !ok || !s.AtEnd() {
		return hexReply{}, false
	}
	return rep, true
}

// scanHexBatch recognises a batch reply: a JSON array of reply objects, each
// with an id, spanning all of body. dst is reused for the result.
func scanHexBatch(body []byte, dst []hexReply) ([]hexReply, bool) {
	dst = dst[:0]
	var s jsonscan.Scanner
	s.Reset(nil, body)
	if s.Open('[') != nil {
		return nil, false
	}
	err := s.Elements(func() error {
		rep, ok := scanReplyObject(&s)
		if !ok || !rep.hasID {
			return errNotRecognised
		}
		dst = append(dst, rep)
		return nil
	})
	if err != nil || !s.AtEnd() {
		return nil, false
	}
	return dst, true
}

// scanHexBatchPrefix recognises the complete reply objects at the front of
// a batch reply cut short (body is its first bytes), as long as they carry
// the ids first, first+1, … in order, and at most n of them.
func scanHexBatchPrefix(body []byte, first uint64, n int) []hexReply {
	var s jsonscan.Scanner
	s.Reset(nil, body)
	if s.Open('[') != nil {
		return nil
	}
	var out []hexReply
	for len(out) < n {
		rep, ok := scanReplyObject(&s)
		if !ok || !rep.hasID || rep.id != first+uint64(len(out)) {
			break
		}
		out = append(out, rep)
		if s.Open(',') != nil {
			break
		}
	}
	return out
}

// errNotRecognised ends a scan of a reply that is not in the expected
// shape; the caller then decodes it with encoding/json.
var errNotRecognised = errors.New("reply not in the expected shape")

// scanReplyObject recognises {"result":"<hex>","error":null,"id":N} with
// optional "jsonrpc":"<plain string>", members in any order, at the
// scanner's position.
func scanReplyObject(s *jsonscan.Scanner) (hexReply, bool) {
	var rep hexReply
	if s.Open('{') != nil {
		return rep, false
	}
	var seenResult, seenError, seenJSONRPC bool
	err := s.Items('}', "a member", func() error {
		key, err := s.PlainString()
		if err != nil {
			return err
		}
		if err := s.Open(':'); err != nil {
			return err
		}
		switch string(key) {
		case "result":
			if seenResult {
				return errNotRecognised
			}
			seenResult = true
			rep.hex, err = s.RawString()
			return err
		case "error":
			if seenError {
				return errNotRecognised
			}
			seenError = true
			if null, err := s.Null(); err != nil || !null {
				return errNotRecognised
			}
			return nil
		case "id":
			if rep.hasID {
				return errNotRecognised
			}
			rep.id, err = s.Uint()
			rep.hasID = err == nil
			return err
		case "jsonrpc":
			if seenJSONRPC {
				return errNotRecognised
			}
			seenJSONRPC = true
			_, err := s.PlainString()
			return err
		}
		// Unknown members (and case variants of known ones, which
		// encoding/json would match) go the slow way.
		return errNotRecognised
	})
	if err != nil || !seenResult {
		return hexReply{}, false
	}
	return rep, true
}
