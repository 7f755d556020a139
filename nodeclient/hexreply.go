package nodeclient

import "bytes"

// The replies that carry a whole block or transaction — getblock <hash> 0
// and getrawtransaction <txid> 0 — are one JSON string of hex, megabytes
// long for a full block. encoding/json validates and copies that string
// byte by byte and then hex.DecodeString copies it again; the CPU profile
// of a catch-up from btcd had that at a fifth of cfindexd's CPU. The
// scanner below recognises the envelope Core and btcd actually send,
//
//	{"result":"<hex>","error":null,"id":7}             (Core)
//	{"jsonrpc":"1.0","result":"<hex>","error":null,"id":7} (btcd)
//
// (members in any order, any JSON whitespace) and returns the hex digits
// in place, to be decoded into a reused buffer. It is deliberately
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
	p := skipSpace(body, 0)
	rep, p, ok := scanReplyObject(body, p)
	if !ok || skipSpace(body, p) != len(body) {
		return hexReply{}, false
	}
	return rep, true
}

// scanHexBatch recognises a batch reply: a JSON array of reply objects, each
// with an id, spanning all of body. dst is reused for the result.
func scanHexBatch(body []byte, dst []hexReply) ([]hexReply, bool) {
	dst = dst[:0]
	p := skipSpace(body, 0)
	if p >= len(body) || body[p] != '[' {
		return nil, false
	}
	p = skipSpace(body, p+1)
	if p < len(body) && body[p] == ']' {
		return dst, skipSpace(body, p+1) == len(body)
	}
	for {
		rep, q, ok := scanReplyObject(body, p)
		if !ok || !rep.hasID {
			return nil, false
		}
		dst = append(dst, rep)
		p = skipSpace(body, q)
		if p >= len(body) {
			return nil, false
		}
		switch body[p] {
		case ',':
			p = skipSpace(body, p+1)
		case ']':
			if skipSpace(body, p+1) != len(body) {
				return nil, false
			}
			return dst, true
		default:
			return nil, false
		}
	}
}

// scanHexBatchPrefix recognises the complete reply objects at the front of
// a batch reply cut short (body is its first bytes), as long as they carry
// the ids first, first+1, … in order, and at most n of them.
func scanHexBatchPrefix(body []byte, first uint64, n int) []hexReply {
	p := skipSpace(body, 0)
	if p >= len(body) || body[p] != '[' {
		return nil
	}
	var out []hexReply
	for p++; len(out) < n; p++ {
		rep, q, ok := scanReplyObject(body, skipSpace(body, p))
		if !ok || !rep.hasID || rep.id != first+uint64(len(out)) {
			break
		}
		out = append(out, rep)
		if p = skipSpace(body, q); p >= len(body) || body[p] != ',' {
			break
		}
	}
	return out
}

// scanReplyObject recognises {"result":"<hex>","error":null,"id":N} with
// optional "jsonrpc":"<plain string>" starting at body[p], and returns the
// offset just after the closing brace.
func scanReplyObject(body []byte, p int) (hexReply, int, bool) {
	var rep hexReply
	if p >= len(body) || body[p] != '{' {
		return rep, 0, false
	}
	p++
	var seenResult, seenError, seenJSONRPC bool
	for first := true; ; first = false {
		p = skipSpace(body, p)
		if p >= len(body) {
			return rep, 0, false
		}
		if body[p] == '}' && first {
			// An empty object has no result.
			return rep, 0, false
		}
		key, q, ok := scanPlainString(body, p)
		if !ok {
			return rep, 0, false
		}
		p = skipSpace(body, q)
		if p >= len(body) || body[p] != ':' {
			return rep, 0, false
		}
		p = skipSpace(body, p+1)
		switch string(key) {
		case "result":
			if seenResult {
				return rep, 0, false
			}
			seenResult = true
			s, q, ok := scanResultString(body, p)
			if !ok {
				return rep, 0, false
			}
			rep.hex, p = s, q
		case "error":
			if seenError || !hasLiteral(body, p, "null") {
				return rep, 0, false
			}
			seenError = true
			p += len("null")
		case "id":
			if rep.hasID {
				return rep, 0, false
			}
			id, q, ok := scanUint(body, p)
			if !ok {
				return rep, 0, false
			}
			rep.id, rep.hasID, p = id, true, q
		case "jsonrpc":
			if seenJSONRPC {
				return rep, 0, false
			}
			seenJSONRPC = true
			_, q, ok := scanPlainString(body, p)
			if !ok {
				return rep, 0, false
			}
			p = q
		default:
			// Unknown members (and case variants of known ones, which
			// encoding/json would match) go the slow way.
			return rep, 0, false
		}
		p = skipSpace(body, p)
		if p >= len(body) {
			return rep, 0, false
		}
		switch body[p] {
		case ',':
			p++
		case '}':
			if !seenResult {
				return rep, 0, false
			}
			return rep, p + 1, true
		default:
			return rep, 0, false
		}
	}
}

// scanPlainString recognises a JSON string at body[p] made only of printable
// ASCII without escapes, and returns its contents and the offset after it.
func scanPlainString(body []byte, p int) ([]byte, int, bool) {
	if p >= len(body) || body[p] != '"' {
		return nil, 0, false
	}
	for i := p + 1; i < len(body); i++ {
		c := body[i]
		switch {
		case c == '"':
			return body[p+1 : i], i + 1, true
		case c == '\\' || c < 0x20 || c > 0x7e:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// scanUint recognises a JSON number at body[p] that is a non-negative
// integer without leading zeros, fraction or exponent, below 10^19 (so it
// fits a uint64).
func scanUint(body []byte, p int) (uint64, int, bool) {
	var v uint64
	i := p
	for ; i < len(body) && body[i] >= '0' && body[i] <= '9'; i++ {
		if i-p >= 19 {
			return 0, 0, false
		}
		v = v*10 + uint64(body[i]-'0')
	}
	n := i - p
	if n == 0 || (n > 1 && body[p] == '0') {
		return 0, 0, false
	}
	if i < len(body) {
		switch body[i] {
		case '.', 'e', 'E', '-', '+':
			return 0, 0, false
		}
	}
	return v, i, true
}

func hasLiteral(body []byte, p int, lit string) bool {
	if len(body)-p < len(lit) || string(body[p:p+len(lit)]) != lit {
		return false
	}
	// "nullx" is not a literal followed by a delimiter.
	q := p + len(lit)
	return q == len(body) || !isIdentByte(body[q])
}

func isIdentByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func skipSpace(body []byte, p int) int {
	for p < len(body) {
		switch body[p] {
		case ' ', '\t', '\n', '\r':
			p++
		default:
			return p
		}
	}
	return p
}

// scanResultString finds the end of the result string at body[p] with
// bytes.IndexByte, which is many times faster than a loop over megabytes of
// hex. A backslash means escapes, which go the slow way; any other byte
// that is not a hex digit (a control character, say, which encoding/json
// would reject) makes the hex decoder fail, so it needs no check here.
func scanResultString(body []byte, p int) ([]byte, int, bool) {
	if p >= len(body) || body[p] != '"' {
		return nil, 0, false
	}
	n := bytes.IndexByte(body[p+1:], '"')
	if n < 0 {
		return nil, 0, false
	}
	s := body[p+1 : p+1+n]
	if bytes.IndexByte(s, '\\') >= 0 {
		return nil, 0, false
	}
	return s, p + 1 + n + 1, true
}
