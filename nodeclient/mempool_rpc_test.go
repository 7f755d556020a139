package nodeclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/internal/corefixture"
)

// GetRawMempool with the mempool sequence decodes Core's recorded reply to
// getrawmempool false true (served here in Core's JSON-RPC 1.0 envelope).
func TestGetRawMempoolDecodesCoreSequenceReply(t *testing.T) {
	fx := corefixture.Load(t)
	body, err := os.ReadFile(filepath.Join(fx.Dir, "rpc", "reorg", "02b-after-invalidateblock.getrawmempool-sequence.json"))
	if err != nil {
		t.Fatal(err)
	}
	var gotParams string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Params json.RawMessage `json:"params"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		gotParams = string(req.Params)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"result":%s,"error":null,"id":%s}`, body, req.ID)
	}))
	defer srv.Close()
	c, err := NewClient(Config{Host: strings.TrimPrefix(srv.URL, "http://"), User: "u", Password: "p", Timeout: 5 * time.Second}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	snap, err := c.GetRawMempool(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if gotParams != "[false,true]" || !snap.HasSequence || snap.Sequence != 111 || len(snap.Txids) != 6 {
		t.Fatalf("params %s: snapshot %+v", gotParams, snap)
	}
	got := slices.Clone(snap.Txids)
	slices.SortFunc(got, cmpHash)
	if !slices.Equal(got, recordedMempoolAfterInvalidate(t, fx)) {
		t.Fatal("txids differ from the recording")
	}
}

func cmpHash(a, b chainhash.Hash) int { return bytes.Compare(a[:], b[:]) }

// recordedMempoolAfterInvalidate is Core's getrawmempool right after the
// invalidateblock, sorted.
func recordedMempoolAfterInvalidate(t *testing.T, fx *corefixture.Fixtures) []chainhash.Hash {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fx.Dir, "rpc", "reorg", "02b-after-invalidateblock.getrawmempool-sequence.json"))
	if err != nil {
		t.Fatal(err)
	}
	var snap struct {
		Txids []string `json:"txids"`
	}
	if err := json.Unmarshal(raw, &snap); err != nil {
		t.Fatal(err)
	}
	var out []chainhash.Hash
	for _, s := range snap.Txids {
		h, err := chainhash.NewHashFromStr(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, *h)
	}
	slices.SortFunc(out, cmpHash)
	return out
}
