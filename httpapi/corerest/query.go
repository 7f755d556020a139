package corerest

import "strings"

// queryParam returns the first value of key in rawQuery the way Core gets
// it from libevent's evhttp_parse_query_str: pairs split on '&', each must
// hold '=' after a non-empty key or the whole query counts as empty, keys
// compare undecoded, values are decoded ('+' is a space, %XX a byte, a
// malformed escape stays as it is).
func queryParam(rawQuery, key string) (string, bool) {
	if rawQuery == "" {
		return "", false
	}
	var (
		val   string
		found bool
	)
	for _, pair := range strings.Split(rawQuery, "&") {
		k, v, ok := strings.Cut(pair, "=")
		if !ok || k == "" {
			return "", false
		}
		if !found && k == key {
			val, found = decodeQueryValue(v), true
		}
	}
	return val, found
}

// decodeQueryValue is libevent's lenient URI decoding with '+' as space.
func decodeQueryValue(v string) string {
	if !strings.ContainsAny(v, "%+") {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '+':
			b.WriteByte(' ')
		case c == '%' && i+2 < len(v) && isHex(v[i+1]) && isHex(v[i+2]):
			hi, lo := unhex(v[i+1]), unhex(v[i+2])
			b.WriteByte(hi<<4 | lo)
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}
