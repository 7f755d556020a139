package nodeclient

import (
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/internal/corefixture"
	"github.com/cfindexd/cfindexd/internal/nodetest"
	"github.com/cfindexd/cfindexd/internal/tcptest"
)

func TestCookieAuthAndRereadAfter401(t *testing.T) {
	fx := corefixture.Load(t)
	c, srv := newFixtureClient(t, fx, corefixture.Options{})
	ctx := nodetest.Ctx(t)
	got, err := c.GetBestBlockHash(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got != fx.Tip {
		t.Fatalf("tip %s, want %s", got, fx.Tip)
	}

	// The node restarts with a new cookie: the cached one gets a 401, the
	// client re-reads the file and the call succeeds.
	srv.RotateCookie(t, strings.Repeat("fe", 32))
	if _, err := c.GetBestBlockHash(ctx); err != nil {
		t.Fatalf("after cookie rotation: %v", err)
	}

	// The file is stale (node expects something else): ErrAuth naming the
	// cookie file.
	srv.ExpectCredentials("__cookie__:" + strings.Repeat("00", 32))
	_, err = c.GetBestBlockHash(ctx)
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), srv.CookieFile()) {
		t.Fatalf("stale cookie: %v, want ErrAuth naming %s", err, srv.CookieFile())
	}
}

func TestUserPasswordAuth(t *testing.T) {
	fx := corefixture.Load(t)
	_, srv := newFixtureClient(t, fx, corefixture.Options{User: "alice", Password: "s3cret"})
	for _, tt := range []struct {
		user, pass string
		wantErr    error
	}{
		{"alice", "s3cret", nil},
		{"alice", "wrong", ErrAuth},
	} {
		c, err := NewClient(Config{Host: srv.Host(), User: tt.user, Password: tt.pass}, nodetest.Logger(t))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.GetBestBlockHash(nodetest.Ctx(t))
		if !errors.Is(err, tt.wantErr) && !(tt.wantErr == nil && err == nil) {
			t.Errorf("%s/%s: %v, want %v", tt.user, tt.pass, err, tt.wantErr)
		}
		if tt.wantErr != nil && !strings.Contains(err.Error(), "rpcuser") {
			t.Errorf("auth error does not say what to check: %v", err)
		}
	}
}

func TestMissingCookieFile(t *testing.T) {
	fx := corefixture.Load(t)
	srv := corefixture.NewServer(t, fx, corefixture.Options{})
	c, err := NewClient(Config{Host: srv.Host(), CookieFile: filepath.Join(t.TempDir(), "nope", ".cookie")}, nodetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetBestBlockHash(nodetest.Ctx(t)); !errors.Is(err, ErrAuth) {
		t.Fatalf("got %v, want ErrAuth", err)
	}
}

func TestUnreachable(t *testing.T) {
	addr := tcptest.RefusedAddr(t)
	c, err := NewClient(Config{Host: addr, User: "u", Password: "p", Timeout: 2 * time.Second}, nodetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetBestBlockHash(nodetest.Ctx(t)); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("got %v, want ErrUnreachable", err)
	}
}

// The recorded Core replies to JSON-RPC 1.0 requests (HTTP 500/404 with a
// JSON body, 401 with an empty one, 405 for GET) are replayed byte for
// byte and must map to the right sentinels.
func TestRecordedErrorRepliesMapToSentinels(t *testing.T) {
	fx := corefixture.Load(t)
	tests := []struct {
		file    string
		method  string
		params  []any
		want    error
		code    int
		notWant []error
	}{
		{"rpc/errors/getblock-unknown-hash.jsonrpc-1.0.http.json", "getblock", []any{strings.Repeat("0", 64)}, ErrBlockNotFound, -5, nil},
		{"rpc/errors/getblock-bad-hash.jsonrpc-1.0.http.json", "getblock", []any{"nothex"}, nil, -8, []error{ErrBlockNotFound}},
		{"rpc/errors/getblockhash-out-of-range.jsonrpc-1.0.http.json", "getblockhash", []any{99999}, nil, -8, []error{ErrBlockNotFound}},
		{"rpc/errors/unknown-method.jsonrpc-1.0.http.json", "nosuchmethod", nil, ErrMethodNotFound, -32601, nil},
		{"rpc/errors/getblock-wrong-param-type.jsonrpc-1.0.http.json", "getblock", nil, nil, -3, nil},
		{"rpc/errors/malformed-json.jsonrpc.http.json", "getblock", nil, nil, -32700, nil},
		{"rpc/errors/wallet-not-specified.jsonrpc-1.0.http.json", "getbalance", nil, nil, -19, nil},
		{"rpc/errors/no-auth.http.json", "getbestblockhash", nil, ErrAuth, 0, nil},
		{"rpc/errors/wrong-password.http.json", "getbestblockhash", nil, ErrAuth, 0, nil},
		{"rpc/errors/get-method.http.json", "getbestblockhash", nil, ErrMalformed, 0, nil},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			ex, err := corefixture.LoadExchange(filepath.Join(fx.Dir, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(ex.Handler())
			defer srv.Close()
			c, err := NewClient(Config{Host: strings.TrimPrefix(srv.URL, "http://"), User: "u", Password: "p"}, nodetest.Logger(t))
			if err != nil {
				t.Fatal(err)
			}
			err = c.Call(nodetest.Ctx(t), tt.method, tt.params, nil)
			if err == nil {
				t.Fatal("no error")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
			for _, nw := range tt.notWant {
				if errors.Is(err, nw) {
					t.Errorf("%v must not match %v", err, nw)
				}
			}
			var rpcErr *RPCError
			if tt.code != 0 && (!errors.As(err, &rpcErr) || rpcErr.Code != tt.code) {
				t.Errorf("got %v, want RPC error %d", err, tt.code)
			}
		})
	}
}

// A recorded successful 1.0 envelope decodes.
func TestRecordedEnvelope(t *testing.T) {
	fx := corefixture.Load(t)
	ex, err := corefixture.LoadExchange(filepath.Join(fx.Dir, "rpc/envelopes/getbestblockhash.jsonrpc-1.0.http.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ex.RequestBody, `"jsonrpc": "1.0"`) {
		t.Fatalf("fixture request: %s", ex.RequestBody)
	}
	srv := httptest.NewServer(ex.Handler())
	defer srv.Close()
	c, _ := NewClient(Config{Host: strings.TrimPrefix(srv.URL, "http://"), User: "u", Password: "p"}, nodetest.Logger(t))
	got, err := c.GetBestBlockHash(nodetest.Ctx(t))
	if err != nil || got != fx.Tip {
		t.Fatalf("got %s, %v", got, err)
	}
}

func TestWarmupAndBatchErrors(t *testing.T) {
	fx := corefixture.Load(t)
	c, srv := newFixtureClient(t, fx, corefixture.Options{})
	ctx := nodetest.Ctx(t)
	srv.SetWarmup(true)
	if _, err := c.GetChainInfo(ctx); !errors.Is(err, ErrWarmup) {
		t.Fatalf("RPC in warmup: %v", err)
	}
	if _, err := c.RESTGet(ctx, "/rest/block/"+fx.Tip.String()+".bin"); !errors.Is(err, ErrWarmup) {
		t.Fatalf("REST in warmup: %v", err)
	}
	srv.SetWarmup(false)

	// Per-element errors in a batch: one known tx, one unknown.
	blk, err := c.GetRawBlock(ctx, fx.Tip)
	if err != nil {
		t.Fatal(err)
	}
	var a, b string
	calls := []BatchCall{
		{Method: "getrawtransaction", Params: []any{blk.Transactions[0].TxHash().String(), 0}, Result: &a},
		{Method: "getrawtransaction", Params: []any{chainhash.Hash{9}.String(), 0}, Result: &b},
	}
	if err := c.CallBatch(ctx, calls); err != nil {
		t.Fatal(err)
	}
	if calls[0].Err != nil || a == "" {
		t.Errorf("first element: %v", calls[0].Err)
	}
	if !errors.Is(calls[1].Err, ErrTxNotFound) {
		t.Errorf("second element: %v, want ErrTxNotFound", calls[1].Err)
	}
}

func TestChainInfoHeaderAndNetwork(t *testing.T) {
	fx := corefixture.Load(t)
	c, _ := newFixtureClient(t, fx, corefixture.Options{})
	ctx := nodetest.Ctx(t)
	ci, err := c.GetChainInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ci.Chain != "regtest" || ci.Blocks != 115 || ci.BestHash != fx.Tip || ci.IBD || ci.Pruned {
		t.Fatalf("chain info %+v", ci)
	}
	for _, b := range fx.Blocks {
		hi, err := c.GetBlockHeaderVerbose(ctx, b.Hash)
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := b.MsgBlock()
		if hi.Height != uint32(b.Height) || hi.PrevHash != blk.Header.PrevBlock || (hi.Confirmations == -1) != b.Stale || !hi.Time.Equal(blk.Header.Timestamp) {
			t.Errorf("%s: header info %+v", b.Name(), hi)
		}
	}
	if err := c.CheckGenesis(ctx, fx.Genesis); err != nil {
		t.Fatal(err)
	}
	mainnetGenesis, _ := chainhash.NewHashFromStr("000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f")
	if err := c.CheckGenesis(ctx, *mainnetGenesis); !errors.Is(err, ErrWrongNetwork) {
		t.Fatalf("got %v, want ErrWrongNetwork", err)
	}
	blk, _ := fx.Blocks[len(fx.Blocks)-1].MsgBlock()
	txid, err := c.SendRawTransaction(ctx, blk.Transactions[1])
	if err != nil || txid != blk.Transactions[1].TxHash() {
		t.Fatalf("sendrawtransaction: %s, %v", txid, err)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"cookie", Config{Host: "127.0.0.1:8332", CookieFile: "/x/.cookie"}, true},
		{"userpass", Config{Host: "localhost:8332", User: "u", Password: "p"}, true},
		{"no host", Config{User: "u", Password: "p"}, false},
		{"no port", Config{Host: "localhost", User: "u", Password: "p"}, false},
		{"no credentials", Config{Host: "localhost:8332"}, false},
		{"user without password", Config{Host: "localhost:8332", User: "u"}, false},
		{"both", Config{Host: "localhost:8332", User: "u", Password: "p", CookieFile: "/x"}, false},
		{"bad rest url", Config{Host: "localhost:8332", User: "u", Password: "p", RESTURL: "ftp://x"}, false},
	} {
		_, err := NewClient(tt.cfg, nodetest.Logger(t))
		if (err == nil) != tt.ok {
			t.Errorf("%s: err=%v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

func TestDefaultCookiePath(t *testing.T) {
	for _, tt := range []struct{ chain, want string }{
		{"main", "/d/.cookie"},
		{"mainnet", "/d/.cookie"},
		{"test", "/d/testnet3/.cookie"},
		{"testnet3", "/d/testnet3/.cookie"},
		{"testnet4", "/d/testnet4/.cookie"},
		{"signet", "/d/signet/.cookie"},
		{"regtest", "/d/regtest/.cookie"},
	} {
		got, err := DefaultCookiePath("/d", tt.chain)
		if err != nil || got != filepath.FromSlash(tt.want) {
			t.Errorf("%s: %q, %v; want %q", tt.chain, got, err, tt.want)
		}
	}
	if _, err := DefaultCookiePath("/d", "simnet"); err == nil {
		t.Error("simnet: no error")
	}
}

// Concurrent callers that all hit the 401 after a node restart all recover,
// not just the one that re-read the cookie first.
func TestCookieRotationConcurrentCallers(t *testing.T) {
	fx := corefixture.Load(t)
	c, srv := newFixtureClient(t, fx, corefixture.Options{})
	ctx := nodetest.Ctx(t)
	if _, err := c.GetBestBlockHash(ctx); err != nil {
		t.Fatal(err)
	}
	srv.RotateCookie(t, strings.Repeat("ab", 32))
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := c.GetBestBlockHash(ctx)
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// GetBlockHashes reads Bitcoin Core's recorded getblockhash replies to the
// active chain's hashes, and a height past the tip fails with Core's
// error.
func TestGetBlockHashesAgainstRecordedCore(t *testing.T) {
	fx := corefixture.Load(t)
	c, srv := newFixtureClient(t, fx, corefixture.Options{})
	chain := fx.ActiveChain()
	got, err := c.GetBlockHashes(nodetest.Ctx(t), 0, uint32(len(chain)))
	if err != nil {
		t.Fatal(err)
	}
	for h, b := range chain {
		if got[h] != b.Hash {
			t.Fatalf("height %d: %s, want %s", h, got[h], b.Hash)
		}
	}
	if n := srv.Batches(); n != 1 {
		t.Errorf("%d batches, want 1", n)
	}
	if _, err := c.GetBlockHashes(nodetest.Ctx(t), uint32(len(chain))-1, 2); err == nil {
		t.Fatal("a height past the tip succeeded")
	}
}
