package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func newTestServer(tb testing.TB, v ChainView, cfg Config) *Server {
	tb.Helper()
	s, err := New(cfg, v, newTestMetrics(), zerolog.Nop())
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// do sends one request straight to the handler.
func do(tb testing.TB, h http.Handler, method, url string, hdr http.Header) *http.Response {
	tb.Helper()
	req := httptest.NewRequest(method, url, nil)
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, req)
	return rr.Result()
}

func body(tb testing.TB, resp *http.Response) []byte {
	tb.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// The Core REST endpoints through the whole server (routing, methods,
// limits, then package corerest over restChain), held against Core's
// recorded answers.

// TestCoreRecordedResponses requests every recorded blockfilter,
// blockfilterheaders, headers (bin, hex) and blockhashbyheight URL (and
// Core's unknown-endpoint answer) and compares
// status, Content-Type and body byte for byte with what Core v31 sent.
func TestCoreRecordedResponses(t *testing.T) {
	h := newTestServer(t, recordedView(t), Config{}).Handler()
	n := 0
	for _, e := range loadIndex(t) {
		served := strings.HasPrefix(e.URL, "/rest/blockfilter/") || strings.HasPrefix(e.URL, "/rest/blockfilterheaders/") ||
			strings.HasPrefix(e.URL, "/rest/blockhashbyheight/") || e.URL == "/rest/nosuchthing.json" ||
			// Header JSON needs chainwork and nTx, which cfindexd does not keep.
			(strings.HasPrefix(e.URL, "/rest/headers/") && !strings.Contains(e.URL, ".json"))
		if !served {
			continue
		}
		n++
		t.Run(e.File, func(t *testing.T) {
			resp := do(t, h, http.MethodGet, e.URL, nil)
			got := body(t, resp)
			want := recordedBody(t, e)
			if resp.StatusCode != e.Status {
				t.Errorf("status %d, want %d", resp.StatusCode, e.Status)
			}
			if ct := resp.Header.Get("Content-Type"); ct != e.ContentType {
				t.Errorf("Content-Type %q, want %q", ct, e.ContentType)
			}
			if cl := resp.Header.Get("Content-Length"); cl != strconv.Itoa(e.BodyLen) {
				t.Errorf("Content-Length %q, want %d", cl, e.BodyLen)
			}
			if !bytes.Equal(got, want) || len(got) != e.BodyLen {
				t.Errorf("body\n got %q\nwant %q", got, want)
			}
		})
	}
	if n < 100 {
		t.Fatalf("only %d recorded REST exchanges compared", n)
	}
}

// TestCoreErrors pins Core's answers (status, text/plain, exact wording, CRLF)
// for requests the recording does not cover, as src/rest.cpp gives them.
func TestCoreErrors(t *testing.T) {
	const (
		tip   = "4474bc8d5b2033a2e5db6fcc8c018dea5faca38d99b0535a41560c3ec29e6452"
		h102  = "0f06761d45f7502ccc48da2dd2e0212915b3acb3444a3e4ae96764321f50a52e"
		zero  = "0000000000000000000000000000000000000000000000000000000000000000"
		stale = "42987b4b368c7574afe60a3480e0094ec1d3c507821d2031c585c64975ab275a"
	)
	h := newTestServer(t, recordedView(t), Config{}).Handler()
	countErr := "Header count is invalid or out of acceptable range (1-2000): "
	tests := []struct {
		name, url string
		status    int
		body      string
	}{
		{"filter bad hash", "/rest/blockfilter/basic/xyz.bin", 400, "Invalid hash: xyz\r\n"},
		{"filter short hash", "/rest/blockfilter/basic/" + tip[:62] + ".hex", 400, "Invalid hash: " + tip[:62] + "\r\n"},
		{"filter xml extension", "/rest/blockfilter/basic/" + tip + ".xml", 400, "Invalid hash: " + tip + ".xml\r\n"},
		{"filter no extension", "/rest/blockfilter/basic/" + tip, 404, "output format not found (available: .bin, .hex, .json)\r\n"},
		{"filter no extension unknown block", "/rest/blockfilter/basic/" + zero, 404, zero + " not found\r\n"},
		{"filter unknown type", "/rest/blockfilter/extended/" + tip + ".hex", 400, "Unknown filtertype extended\r\n"},
		{"filter bad hash before type", "/rest/blockfilter/extended/xyz.hex", 400, "Invalid hash: xyz\r\n"},
		{"filter too few parts", "/rest/blockfilter/" + tip + ".bin", 400, "Invalid URI format. Expected /rest/blockfilter/<filtertype>/<blockhash>\r\n"},
		{"filter too many parts", "/rest/blockfilter/basic/5/" + tip + ".bin", 400, "Invalid URI format. Expected /rest/blockfilter/<filtertype>/<blockhash>\r\n"},
		{"headers count 0", "/rest/blockfilterheaders/basic/" + h102 + ".bin?count=0", 400, countErr + "0\r\n"},
		{"headers count 2001", "/rest/blockfilterheaders/basic/" + h102 + ".hex?count=2001", 400, countErr + "2001\r\n"},
		{"headers count negative", "/rest/blockfilterheaders/basic/" + h102 + ".hex?count=-1", 400, countErr + "-1\r\n"},
		{"headers count plus", "/rest/blockfilterheaders/basic/" + h102 + ".hex?count=%2B5", 400, countErr + "+5\r\n"},
		{"headers count word", "/rest/blockfilterheaders/basic/" + h102 + ".hex?count=abc", 400, countErr + "abc\r\n"},
		{"headers count decoded", "/rest/blockfilterheaders/basic/" + h102 + ".hex?count=1+2", 400, countErr + "1 2\r\n"},
		{"headers count semicolon", "/rest/blockfilterheaders/basic/" + h102 + ".hex?count=5;x", 400, countErr + "5;x\r\n"},
		{"headers count empty", "/rest/blockfilterheaders/basic/" + h102 + ".hex?count=", 400, countErr + "\r\n"},
		{"headers count huge", "/rest/blockfilterheaders/basic/" + h102 + ".hex?count=99999999999999999999999", 400, countErr + "99999999999999999999999\r\n"},
		{"deprecated count 0", "/rest/blockfilterheaders/basic/0/" + h102 + ".bin", 400, countErr + "0\r\n"},
		{"headers count checked before hash", "/rest/blockfilterheaders/basic/xyz.bin?count=0", 400, countErr + "0\r\n"},
		{"headers bad hash", "/rest/blockfilterheaders/basic/xyz.bin", 400, "Invalid hash: xyz\r\n"},
		{"headers unknown type", "/rest/blockfilterheaders/extended/" + h102 + ".bin", 400, "Unknown filtertype extended\r\n"},
		{"headers no extension", "/rest/blockfilterheaders/basic/" + h102, 404, "output format not found (available: .bin, .hex, .json)\r\n"},
		{"headers bad format", "/rest/blockfilterheaders/basic/" + h102 + ".txt", 400, "Invalid hash: " + h102 + ".txt\r\n"},
		{"headers too many parts", "/rest/blockfilterheaders/basic/1/2/" + h102 + ".bin", 400, "Invalid URI format. Expected /rest/blockfilterheaders/<filtertype>/<blockhash>.<ext>?count=<count>\r\n"},
		{"headers unknown block", "/rest/blockfilterheaders/basic/" + zero + ".json", 200, "[]\n"},
		{"block headers json refused", "/rest/headers/" + h102 + ".json", 404, "output format not found (available: .bin, .hex)\r\n"},
		{"block headers no extension", "/rest/headers/" + h102, 404, "output format not found (available: .bin, .hex, .json)\r\n"},
		{"block headers bad URI", "/rest/headers/1/2/" + h102 + ".bin", 400, "Invalid URI format. Expected /rest/headers/<hash>.<ext>?count=<count>\r\n"},
		{"block headers deprecated count", "/rest/headers/2001/" + h102 + ".bin", 400, countErr + "2001\r\n"},
		{"block headers stale", "/rest/headers/" + stale + ".hex", 200, "\n"},
		{"hash by height plus", "/rest/blockhashbyheight/+115.hex", 200, tip + "\n"},
		{"hash by height minus zero", "/rest/blockhashbyheight/-0.hex", 200, "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206\n"},
		{"hash by height plus minus", "/rest/blockhashbyheight/+-1.hex", 400, "Invalid height: -1\r\n"}, // '+' is not a safe char,
		{"hash by height overflow", "/rest/blockhashbyheight/2147483648.hex", 400, "Invalid height: 2147483648\r\n"},
		{"hash by height sanitized", "/rest/blockhashbyheight/1%3Cx%3E.json", 400, "Invalid height: 13Cx3E\r\n"}, // the raw target, '%' dropped,
		{"hash by height no extension", "/rest/blockhashbyheight/3", 404, "output format not found (available: .bin, .hex, .json)\r\n"},
		{"hash by height xml", "/rest/blockhashbyheight/3.xml", 400, "Invalid height: 3.xml\r\n"},
		{"headers stale block", "/rest/blockfilterheaders/basic/" + stale + ".hex?count=2000", 200, "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := do(t, h, http.MethodGet, tc.url, nil)
			got := string(body(t, resp))
			if resp.StatusCode != tc.status || got != tc.body {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, got, tc.status, tc.body)
			}
			if resp.StatusCode != 200 && resp.Header.Get("Content-Type") != "text/plain" {
				t.Errorf("error Content-Type %q", resp.Header.Get("Content-Type"))
			}
		})
	}
}

// TestCoreFilterHeaderForms checks that the default count is 5, that the
// deprecated path form and an upper-case hash answer like the current form,
// that counts stop at the tip, and that POST answers like GET (as Core does).
func TestCoreFilterHeaderForms(t *testing.T) {
	const h102 = "0f06761d45f7502ccc48da2dd2e0212915b3acb3444a3e4ae96764321f50a52e"
	h := newTestServer(t, recordedView(t), Config{}).Handler()
	get := func(method, url string) string {
		resp := do(t, h, method, url, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d", url, resp.StatusCode)
		}
		return string(body(t, resp))
	}
	five := get("GET", "/rest/blockfilterheaders/basic/"+h102+".hex?count=5")
	for _, u := range []string{
		"/rest/blockfilterheaders/basic/" + h102 + ".hex",
		"/rest/blockfilterheaders/basic/5/" + h102 + ".hex",
		"/rest/blockfilterheaders/basic/" + strings.ToUpper(h102) + ".hex?count=005",
		"/rest/blockfilterheaders/basic/" + h102 + ".hex?count=5&count=7",
		"/rest/blockfilterheaders/basic/" + h102 + ".hex?count=000000000000000000000000005",
		"/rest/blockfilterheaders/basic/" + h102 + ".hex?count=%35",
		"/rest/blockfilterheaders/basic/" + h102 + ".hex?novalue&count=2000", // libevent drops the whole query
		"/rest/blockfilterheaders/basic/" + h102 + ".hex?other=1&count=5&count=3",
	} {
		if got := get("GET", u); got != five {
			t.Errorf("%s: %q, want %q", u, got, five)
		}
	}
	if got := get("POST", "/rest/blockfilterheaders/basic/"+h102+".hex?count=5"); got != five {
		t.Errorf("POST: %q", got)
	}
	// From 102 to the tip 115 there are 14 headers.
	if got := get("GET", "/rest/blockfilterheaders/basic/"+h102+".bin?count=2000"); len(got) != 14*32 {
		t.Errorf("count=2000 from h102: %d bytes, want %d", len(got), 14*32)
	}
	if resp := do(t, h, http.MethodDelete, "/rest/blockfilterheaders/basic/"+h102+".hex", nil); resp.StatusCode != 405 {
		t.Errorf("DELETE: %d", resp.StatusCode)
	}
}

func zerologNop() zerolog.Logger { return zerolog.Nop() }
