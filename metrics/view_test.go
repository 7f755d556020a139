package metrics

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/httpapi"
)

// tipView is the smallest httpapi.ChainView the metrics tests need: a tip
// at tipHeight whose block time is tipTime (or an empty index), a store of
// 4096 bytes, and a filter for every hash.
type tipView struct{ empty bool }

const tipHeight = 115

var tipTime = time.Unix(1_600_000_000, 0)

var _ httpapi.ChainView = tipView{}

func (v tipView) Tip() (httpapi.Tip, bool) { return httpapi.Tip{Height: tipHeight}, !v.empty }
func (v tipView) HashAt(h uint32) (chainhash.Hash, error) {
	return chainhash.Hash{}, fmt.Errorf("hash at %d: %w", h, httpapi.ErrNotFound)
}
func (v tipView) HeightOf(hash chainhash.Hash) (uint32, bool, error) {
	return 0, false, fmt.Errorf("height of %s: %w", hash, httpapi.ErrNotFound)
}
func (v tipView) HeaderAt(h uint32) (wire.BlockHeader, error) {
	if v.empty || h != tipHeight {
		return wire.BlockHeader{}, fmt.Errorf("header at %d: %w", h, httpapi.ErrNotFound)
	}
	return wire.BlockHeader{Timestamp: tipTime}, nil
}
func (v tipView) Headers(start, end uint32) ([]wire.BlockHeader, error) {
	return nil, fmt.Errorf("headers %d..%d: %w", start, end, httpapi.ErrNotFound)
}
func (v tipView) FilterByHash(hash chainhash.Hash) (httpapi.BlockRecord, bool, error) {
	return httpapi.BlockRecord{Hash: hash, Filter: []byte{0}}, true, nil
}
func (v tipView) FiltersByHeight(start, end uint32) ([]httpapi.BlockRecord, error) {
	return nil, fmt.Errorf("filters %d..%d: %w", start, end, httpapi.ErrNotFound)
}
func (v tipView) FilterHeadersByHeight(start, end uint32) ([]chainhash.Hash, error) {
	return nil, fmt.Errorf("filter headers %d..%d: %w", start, end, httpapi.ErrNotFound)
}
func (v tipView) Read(fn func(httpapi.ChainReader) error) error { return fn(v) }
func (v tipView) SizeBytes() int64                              { return 4096 }

// newServer returns the handler of an HTTP server on v reporting to m.
func newServer(t *testing.T, v httpapi.ChainView, m *Metrics) http.Handler {
	t.Helper()
	s, err := httpapi.New(httpapi.Config{}, v, m, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return s.Handler()
}

// do sends one request straight to the handler and reads its body.
func do(t *testing.T, h http.Handler, method, url string) (*http.Response, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, url, nil))
	return rec.Result(), rec.Body.Bytes()
}
