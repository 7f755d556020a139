package nodeclient

import (
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

	"github.com/cfindexd/cfindexd/internal/corefixture"
	"github.com/cfindexd/cfindexd/internal/nodetest"
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
	c, err := NewClient(Config{Host: strings.TrimPrefix(srv.URL, "http://"), User: "u", Password: "p", Timeout: 5 * time.Second}, nodetest.Logger(t))
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
	slices.SortFunc(got, nodetest.CmpHash)
	if !slices.Equal(got, nodetest.MempoolAfterInvalidate(t, fx)) {
		t.Fatal("txids differ from the recording")
	}
}
