package prevouts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/internal/corefixture"
	"github.com/cfindexd/cfindexd/internal/wirescan"
	"github.com/cfindexd/cfindexd/nodeclient"
)

// Every recorded getblock 3 reply decodes, streaming, to exactly the block
// getblock 0 returned and the spent scripts the node recorded, and to what
// the reference decoder gets.
func TestDecodeGetBlock3Fixtures(t *testing.T) {
	inputs := 0
	for _, b := range recordedBlocks(t) {
		fb, err := decodeGetBlock3(b.Verbose3, b.Hash)
		if err != nil {
			t.Fatalf("%s: %v", b.Name(), err)
		}
		if diff := fetchedMatches(fb, b.Raw); diff != "" {
			t.Errorf("%s: %s", b.Name(), diff)
		}
		want := expectedPrevScripts(t, b)
		if !equalScripts(fb.PrevScripts, want) {
			t.Errorf("%s: prevScripts differ (%d vs %d)", b.Name(), len(fb.PrevScripts), len(want))
		}
		inputs += len(want)
		blk, prev, err := parseVerboseBlockReference(b.Verbose3, b.Hash)
		if err != nil || !bytes.Equal(serializeBlock(t, blk), fb.Raw) || !equalScripts(prev, fb.PrevScripts) {
			t.Errorf("%s: the reference decoder disagrees (%v)", b.Name(), err)
		}
	}
	if inputs < 80 {
		t.Fatalf("only %d inputs checked", inputs)
	}
}

// The reply envelope: a block comes back whatever the member order and
// spacing; error objects come back as *RPCError (mapped to the
// sentinels); anything else is ErrMalformed.
func TestDecodeGetBlock3Reply(t *testing.T) {
	fx := corefixture.Load(t)
	b, _ := fx.BlockByHash(fx.Tip)
	res := string(b.Verbose3)
	for _, tt := range []struct {
		name   string
		body   string
		status int
		want   error // nil: the block
	}{
		{"core", `{"result":` + res + `,"error":null,"id":1}`, 200, nil},
		{"btcd order, spaces", "{\n \"jsonrpc\": \"1.0\", \"id\": 9, \"error\": null,\t\"result\": " + res + "}\n", 200, nil},
		{"not found", `{"result":null,"error":{"code":-5,"message":"Block not found"},"id":1}`, 500, nodeclient.ErrBlockNotFound},
		{"warming up", `{"result":null,"error":{"code":-28,"message":"Loading block index..."},"id":1}`, 500, nodeclient.ErrWarmup},
		{"pruned", `{"result":null,"error":{"code":-1,"message":"Block not available (pruned data)"},"id":1}`, 500, nodeclient.ErrPruned},
		{"null result", `{"result":null,"error":null,"id":1}`, 200, nodeclient.ErrMalformed},
		{"no result", `{"error":null,"id":1}`, 200, nodeclient.ErrMalformed},
		{"500 without error", `{"result":` + res + `,"error":null,"id":1}`, 500, nodeclient.ErrMalformed},
		{"repeated result", `{"result":` + res + `,"result":` + res + `}`, 200, nodeclient.ErrMalformed},
		{"Result", `{"Result":` + res + `}`, 200, nodeclient.ErrMalformed},
		{"truncated", `{"result":` + res[:len(res)/2], 200, nodeclient.ErrMalformed},
		{"empty", ``, 200, nodeclient.ErrMalformed},
		{"array", `[]`, 200, nodeclient.ErrMalformed},
	} {
		fb, err := decodeGetBlock3Reply(strings.NewReader(tt.body), tt.status, b.Hash)
		switch {
		case tt.want == nil && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want == nil && !bytes.Equal(fb.Raw, b.Raw):
			t.Errorf("%s: block bytes differ", tt.name)
		case tt.want != nil && !errors.Is(err, tt.want):
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	var rpcErr *nodeclient.RPCError
	_, err := decodeGetBlock3Reply(strings.NewReader(`{"result":null,"error":{"code":-5,"message":"Block not found"},"id":1}`), 500, b.Hash)
	if !errors.As(err, &rpcErr) || rpcErr.Code != -5 || rpcErr.Method != "getblock" {
		t.Errorf("error object: %#v", err)
	}
}

// Malformed, inconsistent or hostile replies are refused with ErrMalformed
// (or ErrPruned for a missing prevout), never a panic.
func TestDecodeGetBlock3Rejects(t *testing.T) {
	fx := corefixture.Load(t)
	b, _ := fx.BlockByHash(fx.Tip)
	doc := string(b.Verbose3)
	edit := func(f func(m map[string]any)) string {
		var m map[string]any
		if err := json.Unmarshal(b.Verbose3, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		out, _ := json.Marshal(m)
		return string(out)
	}
	txs := func(m map[string]any) []any { return m["tx"].([]any) }
	tx := func(m map[string]any, i int) map[string]any { return txs(m)[i].(map[string]any) }
	vin := func(m map[string]any, i, j int) map[string]any {
		return tx(m, i)["vin"].([]any)[j].(map[string]any)
	}
	hex1 := tx(mustMap(t, b.Verbose3), 1)["hex"].(string)
	for _, tt := range []struct {
		name string
		doc  string
		hash chainhash.Hash
		want error
	}{
		{"wrong hash asked", doc, chainhash.Hash{1}, nodeclient.ErrMalformed},
		{"not json", "{", b.Hash, nodeclient.ErrMalformed},
		{"nonce changed", edit(func(m map[string]any) { m["nonce"] = 12345.0 }), b.Hash, nodeclient.ErrMalformed},
		{"nonce fractional", strings.Replace(doc, `"nonce":3,`, `"nonce":3.0,`, 1), b.Hash, nodeclient.ErrMalformed},
		{"nonce negative", strings.Replace(doc, `"nonce":3,`, `"nonce":-3,`, 1), b.Hash, nodeclient.ErrMalformed},
		{"nonce missing", edit(func(m map[string]any) { delete(m, "nonce") }), b.Hash, nodeclient.ErrMalformed},
		{"nonce repeated", strings.Replace(doc, `"nonce":3,`, `"nonce":3,"nonce":3,`, 1), b.Hash, nodeclient.ErrMalformed},
		{"Nonce as well", strings.Replace(doc, `"nonce":3,`, `"nonce":3,"Nonce":4,`, 1), b.Hash, nodeclient.ErrMalformed},
		{"merkleroot short", edit(func(m map[string]any) { m["merkleroot"] = m["merkleroot"].(string)[2:] }), b.Hash, nodeclient.ErrMalformed},
		{"bits not hex", edit(func(m map[string]any) { m["bits"] = "zz" }), b.Hash, nodeclient.ErrMalformed},
		{"tx dropped", edit(func(m map[string]any) { m["tx"] = txs(m)[:2] }), b.Hash, nodeclient.ErrMalformed},
		{"no tx", edit(func(m map[string]any) { delete(m, "tx") }), b.Hash, nodeclient.ErrMalformed},
		{"tx hex altered", edit(func(m map[string]any) {
			h := tx(m, 1)["hex"].(string)
			tx(m, 1)["hex"] = h[:len(h)-2] + "01"
		}), b.Hash, nodeclient.ErrMalformed},
		{"tx hex odd", edit(func(m map[string]any) { tx(m, 1)["hex"] = tx(m, 1)["hex"].(string) + "0" }), b.Hash, nodeclient.ErrMalformed},
		{"tx hex escaped", strings.Replace(doc, `"hex":"`+hex1[:4], `"hex":"\u0030`+hex1[1:4], 1), b.Hash, nodeclient.ErrMalformed},
		{"tx hex upper case", strings.Replace(doc, hex1, strings.ToUpper(hex1), 1), b.Hash, nil},
		{"hex split elsewhere", edit(func(m map[string]any) {
			// The last byte of tx 1 moves to the front of tx 2: the
			// bytes are the block's, the split is not.
			h1, h2 := tx(m, 1)["hex"].(string), tx(m, 2)["hex"].(string)
			tx(m, 1)["hex"], tx(m, 2)["hex"] = h1[:len(h1)-2], h1[len(h1)-2:]+h2
		}), b.Hash, nodeclient.ErrMalformed},
		{"tx without hex", edit(func(m map[string]any) { delete(tx(m, 1), "hex") }), b.Hash, nodeclient.ErrMalformed},
		{"vin count differs", edit(func(m map[string]any) {
			tx(m, 1)["vin"] = append(tx(m, 1)["vin"].([]any), tx(m, 1)["vin"].([]any)[0])
		}), b.Hash, nodeclient.ErrMalformed},
		{"prevout missing (pruned undo)", edit(func(m map[string]any) { delete(vin(m, 1, 0), "prevout") }), b.Hash, nodeclient.ErrPruned},
		{"prevout null", edit(func(m map[string]any) { vin(m, 1, 0)["prevout"] = nil }), b.Hash, nodeclient.ErrPruned},
		{"prevout without script", edit(func(m map[string]any) { delete(vin(m, 1, 0)["prevout"].(map[string]any), "scriptPubKey") }), b.Hash, nodeclient.ErrMalformed},
		{"prevout script too long", edit(func(m map[string]any) {
			vin(m, 1, 0)["prevout"].(map[string]any)["scriptPubKey"].(map[string]any)["hex"] = strings.Repeat("51", maxG3ScriptBytes+1)
		}), b.Hash, nodeclient.ErrMalformed},
		{"no coinbase", edit(func(m map[string]any) { delete(vin(m, 0, 0), "coinbase") }), b.Hash, nodeclient.ErrMalformed},
		{"deeply nested skipped value", strings.Replace(doc, `"nonce":3,`, `"nonce":3,"x":`+strings.Repeat("[", 100)+strings.Repeat("]", 100)+`,`, 1), b.Hash, nodeclient.ErrMalformed},
		{"trailing comma", strings.Replace(doc, `"nonce":3,`, `"nonce":3,}`, 1), b.Hash, nodeclient.ErrMalformed},
	} {
		_, err := decodeGetBlock3([]byte(tt.doc), tt.hash)
		if tt.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
}

func mustMap(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// A peer (a proxy in front of the node) gets no more memory out of the
// decoder than a small multiple of what it sent, nor more than the block
// limits: an endless hex string stops at 4,000,000 bytes, many inputs
// without prevouts at the first, deep nesting at 64 levels.
func TestDecodeGetBlock3AllocationBounded(t *testing.T) {
	fx := corefixture.Load(t)
	b, _ := fx.BlockByHash(fx.Tip)
	head := `{"result":{"version":1,"tx":[{"vin":[{"coinbase":"00"}],"hex":"`
	for _, tt := range []struct {
		name  string
		body  io.Reader
		bytes int64 // what the peer sends (at most)
		limit int64 // allocation allowed
	}{
		{"endless tx hex", io.MultiReader(strings.NewReader(head), zeros{}), 1 << 62, 3 * maxG3BlockBytes},
		{"endless prevout hex", io.MultiReader(strings.NewReader(`{"result":{"tx":[{"vin":[{"coinbase":""}],"hex":""},{"vin":[{"prevout":{"scriptPubKey":{"hex":"`), zeros{}), 1 << 62, 1 << 20},
		{"many empty inputs", strings.NewReader(`{"result":{"tx":[{"hex":"","vin":[{"coinbase":""}` + strings.Repeat(`,{"coinbase":""}`, 200_000) + `]}]}}`), 3_400_000, 4 << 20},
		{"deep nesting", strings.NewReader(`{"result":{"x":` + strings.Repeat("[", 1_000_000) + `}}`), 1_000_000, 1 << 20},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := decodeGetBlock3Reply(io.LimitReader(tt.body, 64<<20), 200, b.Hash)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
		if got := int64(after.TotalAlloc - before.TotalAlloc); got > tt.limit {
			t.Errorf("%s: allocated %d bytes (limit %d) for at most %d received: %v", tt.name, got, tt.limit, tt.bytes, err)
		}
	}
}

// zeros is an endless stream of '0' hex digits.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '0'
	}
	return len(p), nil
}

func FuzzDecodeGetBlock3(f *testing.F) {
	hashes := map[string]chainhash.Hash{}
	for _, b := range recordedBlocks(f) {
		if len(b.Verbose3) < 8000 {
			f.Add(b.Verbose3)
		}
		hashes[b.Hash.String()] = b.Hash
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Ask for the hash the JSON claims, so the fuzzer can reach past
		// the header check.
		var h struct {
			Hash string `json:"hash"`
		}
		_ = json.Unmarshal(data, &h)
		want, ok := hashes[strings.ToLower(h.Hash)]
		if !ok {
			want = chainhash.Hash{}
		}
		fb, err := decodeGetBlock3(data, want)
		if err != nil {
			if !errors.Is(err, nodeclient.ErrMalformed) && !errors.Is(err, nodeclient.ErrPruned) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		sb, err := wirescan.ScanBlock(bytes.Clone(fb.Raw), want)
		if err != nil {
			t.Fatalf("accepted a block the scanner refuses: %v", err)
		}
		if fb.Hash != want || len(sb.Spends) != len(fb.PrevScripts) || !equalScripts(sb.Outs, fb.OutputScripts) {
			t.Fatalf("accepted an inconsistent block: %d spends, %d prevouts", len(sb.Spends), len(fb.PrevScripts))
		}
		// Where the reference decoder accepts the same bytes, both read
		// the same block and scripts.
		if blk, prev, err := parseVerboseBlockReference(data, want); err == nil {
			if !bytes.Equal(serializeBlock(t, blk), fb.Raw) || !equalScripts(prev, fb.PrevScripts) {
				t.Fatalf("the decoders disagree")
			}
		}
	})
}

// The getblock-3 source fetches a run's blocks in parallel, never more
// at once than one fewer than the node's RPC threads, returns them in
// order, and returns the first failure rather than its consequences.
func TestGetBlock3SourceParallel(t *testing.T) {
	fx := corefixture.Load(t)
	byHash := map[string]*corefixture.Block{}
	var hashes []chainhash.Hash
	for _, b := range fx.Blocks {
		byHash[b.Hash.String()] = b
		hashes = append(hashes, b.Hash)
	}
	var inFlight, peak atomic.Int32
	var mu sync.Mutex
	fail := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		var req struct {
			ID     uint64 `json:"id"`
			Params []any  `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Params) != 2 || req.Params[1] != 3.0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		time.Sleep(20 * time.Millisecond) // long enough for requests to overlap
		w.Header().Set("Content-Type", "application/json")
		h := req.Params[0].(string)
		mu.Lock()
		failing := fail[h]
		mu.Unlock()
		b, ok := byHash[h]
		if !ok || failing {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"result":null,"error":{"code":-5,"message":"Block not found"},"id":%d}`, req.ID)
			return
		}
		fmt.Fprintf(w, `{"result":%s,"error":null,"id":%d}`, b.Verbose3, req.ID)
	}))
	t.Cleanup(srv.Close)
	c, err := nodeclient.NewClient(nodeclient.Config{Host: strings.TrimPrefix(srv.URL, "http://"), User: "u", Password: "p", Timeout: 5 * time.Second}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	const threads = 4
	src, err := NewSource(c, ModeGetBlock3, SourceOptions{RPCThreads: threads})
	if err != nil {
		t.Fatal(err)
	}
	runs := src.(RunBlockSource)
	out, err := runs.FetchBlocks(testCtx(t), hashes, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, fb := range out {
		b := byHash[hashes[i].String()]
		if diff := fetchedMatches(fb, b.Raw); diff != "" || !equalScripts(fb.PrevScripts, expectedPrevScripts(t, b)) {
			t.Errorf("%s: %s", b.Name(), diff)
		}
	}
	if p := peak.Load(); p < 2 || p > threads-1 {
		t.Errorf("at most %d requests in flight, want 2..%d", p, threads-1)
	}

	mu.Lock()
	fail[hashes[3].String()] = true
	mu.Unlock()
	if _, err := runs.FetchBlocks(testCtx(t), hashes, nil); !errors.Is(err, nodeclient.ErrBlockNotFound) {
		t.Errorf("a run with a missing block: %v, want nodeclient.ErrBlockNotFound", err)
	}
}
