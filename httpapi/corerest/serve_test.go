package corerest

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// fakeChain is a Chain of one block at height 0 whose reads fail with err
// when it is set.
type fakeChain struct {
	hash   chainhash.Hash
	filter []byte
	header wire.BlockHeader
	err    error
}

func (c fakeChain) Filter(hash chainhash.Hash) ([]byte, bool, error) {
	return c.filter, c.err == nil && hash == c.hash, c.err
}

func (c fakeChain) HashAt(height uint32) (chainhash.Hash, bool, error) {
	return c.hash, c.err == nil && height == 0, c.err
}

func (c fakeChain) FilterHeadersFrom(hash chainhash.Hash, count int) ([]chainhash.Hash, error) {
	if c.err != nil || hash != c.hash {
		return nil, c.err
	}
	return []chainhash.Hash{{0xfe}}, nil
}

func (c fakeChain) HeadersFrom(hash chainhash.Hash, count int) ([]wire.BlockHeader, error) {
	if c.err != nil || hash != c.hash {
		return nil, c.err
	}
	return []wire.BlockHeader{c.header}, nil
}

// TestServeAnswersFromChain pins how Serve turns what the chain holds, does
// not hold and fails to read into Core's answers: a failed read goes to
// internalError with the endpoint's name and nothing else is written.
func TestServeAnswersFromChain(t *testing.T) {
	header := wire.BlockHeader{Version: 1, Bits: 0x207fffff}
	hash := header.BlockHash()
	h := hash.String()
	zero := strings.Repeat("0", 64)
	ok := fakeChain{hash: hash, filter: []byte{1, 0xaa}, header: header}
	broken := ok
	broken.err = errors.New("disk on fire")
	tests := []struct {
		name, url string
		chain     Chain
		status    int
		body      string
		failed    string // the endpoint handed to internalError
	}{
		{"filter json", "/rest/blockfilter/basic/" + h + ".json", ok, 200, `{"filter":"01aa"}` + "\n", ""},
		{"filter unknown", "/rest/blockfilter/basic/" + zero + ".bin", ok, 404, zero + " not found\r\n", ""},
		{"filter read fails", "/rest/blockfilter/basic/" + h + ".bin", broken, 0, "", "blockfilter"},
		{"filter headers", "/rest/blockfilterheaders/basic/" + h + ".json", ok, 200, `["` + chainhash.Hash{0xfe}.String() + `"]` + "\n", ""},
		{"filter headers unknown", "/rest/blockfilterheaders/basic/" + zero + ".hex", ok, 200, "\n", ""},
		{"filter headers read fails", "/rest/blockfilterheaders/basic/" + h + ".hex", broken, 0, "", "blockfilterheaders"},
		{"headers read fails", "/rest/headers/" + h + ".bin", broken, 0, "", "headers"},
		{"hash by height", "/rest/blockhashbyheight/0.hex", ok, 200, h + "\n", ""},
		{"hash above the tip", "/rest/blockhashbyheight/1.hex", ok, 404, "Block height out of range\r\n", ""},
		{"hash by height read fails", "/rest/blockhashbyheight/0.hex", broken, 0, "", "blockhashbyheight"},
		{"unknown endpoint", "/rest/nosuchthing.json", ok, 404, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tc.url, nil)
			parsed, isREST := Parse(req.URL.EscapedPath(), req.URL.RawQuery)
			if !isREST {
				t.Fatalf("%s not parsed as REST", tc.url)
			}
			rr := httptest.NewRecorder()
			failed := ""
			Serve(rr, parsed, tc.chain, func(w http.ResponseWriter, endpoint string, err error) {
				if !errors.Is(err, broken.err) {
					t.Errorf("internalError got %v", err)
				}
				failed = endpoint
			})
			if failed != tc.failed {
				t.Fatalf("internalError for %q, want %q", failed, tc.failed)
			}
			if tc.failed != "" {
				if rr.Body.Len() != 0 || len(rr.Header()) != 0 {
					t.Fatalf("wrote %q, headers %v before internalError", rr.Body, rr.Header())
				}
				return
			}
			got, _ := io.ReadAll(rr.Result().Body)
			if rr.Code != tc.status || string(got) != tc.body {
				t.Errorf("got %d %q, want %d %q", rr.Code, got, tc.status, tc.body)
			}
		})
	}
	if _, isREST := Parse("/bulk/index.json", ""); isREST {
		t.Error("/bulk/ parsed as REST")
	}
}
