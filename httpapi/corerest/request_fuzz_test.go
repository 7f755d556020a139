package corerest

import (
	"net/url"
	"strconv"
	"testing"
)

// FuzzParse drives Parse with arbitrary targets: nothing panics, accepted
// values respect Core's limits, a valid request re-parses to the same
// values from its canonical URL, and every refusal is a 400 or 404 with a
// message.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"/rest/blockfilterheaders/basic/5/0f06761d45f7502ccc48da2dd2e0212915b3acb3444a3e4ae96764321f50a52e.bin",
		"/rest/blockfilterheaders/basic/0f06761d45f7502ccc48da2dd2e0212915b3acb3444a3e4ae96764321f50a52e.json?count=18446744073709551617",
		"/rest/blockfilter/basic/0f06761d45f7502ccc48da2dd2e0212915b3acb3444a3e4ae96764321f50a52e.hex",
		"/rest/blockfilter/basic/.bin", "/rest/blockfilter//.", "/rest/blockfilterheaders/basic/x.hex?count=%zz",
		"/rest/headers/0f06761d45f7502ccc48da2dd2e0212915b3acb3444a3e4ae96764321f50a52e.bin?count=7",
		"/rest/blockhashbyheight/+115.hex", "/rest/blockhashbyheight/2147483648.json", "/rest/nosuchthing.json", "/bulk/index.json",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.ParseRequestURI(raw)
		if err != nil {
			return
		}
		c, ok := Parse(u.EscapedPath(), u.RawQuery)
		if !ok {
			return
		}
		if c.err != nil {
			if c.err.msg == "" || (c.err.status != 400 && c.err.status != 404) {
				t.Fatalf("error %+v", c.err)
			}
			return
		}
		switch c.Endpoint {
		case Headers:
			if len(c.hashStr) != 64 || c.count < 1 || c.count > MaxHeadersResults {
				t.Fatalf("accepted headers request %+v", c)
			}
		case BlockHashByHeight:
			if c.height > 1<<31-1 {
				t.Fatalf("accepted height %d", c.height)
			}
		case BlockFilter, BlockFilterHeaders:
			if len(c.hashStr) != 64 {
				t.Fatalf("accepted hash %q", c.hashStr)
			}
			if c.headers && (c.count < 1 || c.count > MaxHeadersResults) {
				t.Fatalf("accepted count %d", c.count)
			}
			ext := map[restFormat]string{formatBin: ".bin", formatHex: ".hex", formatJSON: ".json", formatUndef: ""}[c.format]
			canon := prefixBlockFilter + "basic/" + c.hash.String() + ext
			if c.headers {
				canon = prefixBlockFilterHeaders + "basic/" + c.hash.String() + ext
			}
			again, ok := Parse(canon, "count="+strconv.Itoa(c.count))
			if !ok || again.err != nil || again.Endpoint != c.Endpoint || again.hash != c.hash || again.format != c.format ||
				(c.headers && again.count != c.count) {
				t.Fatalf("canonical %q re-parses to %+v, want %+v", canon, again, c)
			}
		}
	})
}
