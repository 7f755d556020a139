package prevouts

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/corefiles"
	"github.com/cfindexd/cfindexd/internal/corefixture"
	"github.com/cfindexd/cfindexd/nodeclient"
)

// fakeCoreNode answers what detection asks a Bitcoin Core v31 node whose
// chain is the blocks-dir fixture's: getnetworkinfo, getblockhash 0,
// getbestblockhash, and REST spenttxouts (so the fallback is REST).
func fakeCoreNode(t *testing.T, fx *corefiles.Fixture) (*nodeclient.Client, *atomic.Int64) {
	t.Helper()
	var restCalls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/rest/spenttxouts/") {
			restCalls.Add(1)
			hash, err := chainhash.NewHashFromStr(strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/rest/spenttxouts/"), ".bin"))
			b, ok := fx.Block(*hash)
			if err != nil || !ok {
				http.NotFound(w, r)
				return
			}
			w.Write(b.SpentTxOuts)
			return
		}
		var req struct {
			Method string            `json:"method"`
			ID     json.RawMessage   `json:"id"`
			Params []json.RawMessage `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		var result any
		switch req.Method {
		case "getnetworkinfo":
			result = map[string]any{"version": 310000, "subversion": "/Satoshi:31.0.0/"}
		case "getblockhash":
			result = fx.Params.GenesisHash.String()
		case "getbestblockhash":
			result = fx.Tip.String()
		default:
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]any{"result": nil, "error": map[string]any{"code": -32601, "message": "Method not found"}, "id": req.ID})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"result": result, "error": nil, "id": req.ID})
	}))
	t.Cleanup(srv.Close)
	c, err := nodeclient.NewClient(nodeclient.Config{Host: strings.TrimPrefix(srv.URL, "http://"), User: "u", Password: "p", Timeout: 5 * time.Second}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, &restCalls
}

// Detection picks the blocks directory for Bitcoin Core when it is readable
// and holds the node's chain, with the source it would have picked
// otherwise as the fallback; a missing directory, one of another network,
// or one without the node's tip is passed over (logged at info) in auto
// mode and refused when the directory is forced.
func TestDetectSourceBlocksDir(t *testing.T) {
	fx := corefiles.LoadFixture(t)
	noTip := copyFixture(t, fx)
	tip, _ := fx.Block(fx.Tip)
	truncateFile(t, filepath.Join(noTip, "blk00000.dat"), tip.DataPos-recordHeaderSize)
	otherNet := t.TempDir()
	if _, err := corefiles.Write(otherNet, &chaincfg.SimNetParams, []*wire.MsgBlock{chaincfg.SimNetParams.GenesisBlock}, corefiles.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir string
		ok        bool
	}{
		{"Core's directory", fx.BlocksDir, true},
		{"missing directory", filepath.Join(t.TempDir(), "nope"), false},
		{"another network's directory", otherNet, false},
		{"the node's tip is not in it", noTip, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := fakeCoreNode(t, fx)
			opts := SourceOptions{BlocksDir: tc.dir, BlocksDirNet: chaincfg.RegressionNetParams.Net}
			src, err := DetectSource(testCtx(t), c, testLogger(t), opts)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.ok {
				if src.Mode() != ModeREST {
					t.Fatalf("auto picked %s, want rest", src.Mode())
				}
			} else {
				bd, ok := src.(*BlocksDirSource)
				if !ok {
					t.Fatalf("auto picked %s, want %s", src.Mode(), ModeBlocksDir)
				}
				if bd.Fallback() == nil || bd.Fallback().Mode() != ModeREST {
					t.Fatalf("fallback %v, want REST", bd.Fallback())
				}
			}
			opts.Force = ModeBlocksDir
			_, err = DetectSource(testCtx(t), c, testLogger(t), opts)
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, nodeclient.ErrNoPrevoutSource)) {
				t.Fatalf("forced: %v", err)
			}
		})
	}
}

// Against the recorded Core v31 node of the other fixture (same regtest
// genesis, another chain), auto mode does not use the blocks-dir fixture:
// the node's tip is not in it.
func TestDetectSourceSkipsAnotherNodesBlocksDir(t *testing.T) {
	bfx := corefiles.LoadFixture(t)
	fx := corefixture.Load(t)
	c, _ := newFixtureClient(t, fx, corefixture.Options{})
	src, err := DetectSource(testCtx(t), c, testLogger(t), SourceOptions{BlocksDir: bfx.BlocksDir, BlocksDirNet: chaincfg.RegressionNetParams.Net})
	if err != nil {
		t.Fatal(err)
	}
	if src.Mode() != ModeREST {
		t.Fatalf("picked %s, want %s", src.Mode(), ModeREST)
	}
}
