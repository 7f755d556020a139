package corefixture

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// Options changes how the replay server presents itself.
type Options struct {
	// Version overrides getnetworkinfo's version (e.g. 220000 to look like
	// Core 22.0); 0 keeps the recorded 310000 (/Satoshi:31.0.0/).
	Version int
	// Btcd answers like btcd: getnetworkinfo unimplemented, "version"
	// with btcdjsonrpcapi, no getindexinfo, no REST, errors with HTTP 200.
	Btcd bool
	// DisableREST answers every /rest/ path like a node without -rest=1.
	DisableREST bool
	// NoTxIndex hides the txindex from getindexinfo and makes
	// getrawtransaction fail like a node without -txindex.
	NoTxIndex bool
	// User and Password, if set, replace cookie auth.
	User, Password string
	// PrunedBelow makes blocks below this height answer like pruned ones.
	PrunedBelow int32
}

// Server replays the recording over HTTP (JSON-RPC on POST /, REST on
// /rest/). It checks HTTP Basic auth against the cookie file it wrote (or
// Options.User/Password).
type Server struct {
	fx    *Fixtures
	opts  Options
	srv   *httptest.Server
	dir   string
	cookF string

	mu      sync.Mutex
	secret  string // expected "user:password"
	warmup  bool
	started time.Time // answered by uptime (an hour before NewServer); Restart moves it to now
	restOff bool      // Options.DisableREST, changed by Restart
	best    *chainhash.Hash
	active  *activeChain // nil: the recorded final state
	calls   map[string]int
	batches int
}

// NewServer starts a replay server on loopback; tb.Cleanup closes it. The
// cookie file is written to <DataDir()>/regtest/.cookie.
func NewServer(tb testing.TB, fx *Fixtures, opts Options) *Server {
	tb.Helper()
	s := &Server{fx: fx, opts: opts, dir: tb.TempDir(), calls: make(map[string]int), started: time.Now().Add(-time.Hour), restOff: opts.DisableREST}
	s.cookF = filepath.Join(s.dir, "regtest", ".cookie")
	if err := os.MkdirAll(filepath.Dir(s.cookF), 0o700); err != nil {
		tb.Fatal(err)
	}
	if opts.User != "" {
		s.secret = opts.User + ":" + opts.Password
	} else {
		if err := os.WriteFile(s.cookF, []byte(fx.Cookie), 0o600); err != nil {
			tb.Fatal(err)
		}
		s.secret = fx.Cookie
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	tb.Cleanup(s.srv.Close)
	return s
}

// Host returns host:port of the server.
func (s *Server) Host() string { return strings.TrimPrefix(s.srv.URL, "http://") }

// URL returns http://host:port.
func (s *Server) URL() string { return s.srv.URL }

// DataDir is the fake node datadir (cookie under regtest/).
func (s *Server) DataDir() string { return s.dir }

// CookieFile is <DataDir>/regtest/.cookie.
func (s *Server) CookieFile() string { return s.cookF }

// Close stops the server (as if the node went down).
func (s *Server) Close() { s.srv.Close() }

// RotateCookie simulates a node restart: a new cookie secret is written to
// the cookie file and only it is accepted from now on.
func (s *Server) RotateCookie(tb testing.TB, secret string) {
	tb.Helper()
	line := "__cookie__:" + secret
	if err := os.WriteFile(s.cookF, []byte(line), 0o600); err != nil {
		tb.Fatal(err)
	}
	s.mu.Lock()
	s.secret = line
	s.mu.Unlock()
}

// ExpectCredentials changes the accepted "user:password" without touching
// the cookie file (a cookie file that is out of date).
func (s *Server) ExpectCredentials(userPass string) {
	s.mu.Lock()
	s.secret = userPass
	s.mu.Unlock()
}

// Restart simulates a node restart with other options: uptime starts
// again from zero and the REST interface is on or off from now on.
func (s *Server) Restart(rest bool) {
	s.mu.Lock()
	s.started = time.Now()
	s.restOff = !rest
	s.mu.Unlock()
}

// SetWarmup makes every RPC answer -28 and REST 503 while on.
func (s *Server) SetWarmup(on bool) {
	s.mu.Lock()
	s.warmup = on
	s.mu.Unlock()
}

// SetBestBlockHash overrides getbestblockhash only (every other call keeps
// answering for the recorded chain); see SetActiveTip for a consistent
// switch.
func (s *Server) SetBestBlockHash(h chainhash.Hash) {
	s.mu.Lock()
	s.best = &h
	s.mu.Unlock()
}

// Calls returns how many times method was called (batch elements count
// one each).
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// Batches returns how many JSON-RPC batch requests arrived.
func (s *Server) Batches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.batches
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/rest/") {
		s.serveREST(w, r)
		return
	}
	if !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="jsonrpc"`)
		w.Header().Set("Content-Type", "text/html; charset=ISO-8859-1")
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Content-Type", "text/html; charset=ISO-8859-1")
		w.WriteHeader(http.StatusMethodNotAllowed)
		_, _ = io.WriteString(w, "JSONRPC server handles only POST requests")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	status, reply := s.serveRPC(bytes.TrimSpace(body))
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(reply)
}

func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	if !strings.HasPrefix(h, "Basic ") {
		return false
	}
	got, err := base64.StdEncoding.DecodeString(h[len("Basic "):])
	if err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(got) == s.secret
}

type rpcRequest struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      json.RawMessage   `json:"id"`
	Method  string            `json:"method"`
	Params  []json.RawMessage `json:"params"`
}

type rpcErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// serveRPC answers a single request or a batch with Core's envelopes and
// statuses (src/rpc/request.cpp): 1.0/legacy requests get
// {"result","error","id"} and HTTP 500 (404 for -32601) on error; 2.0
// requests get {"jsonrpc":"2.0",...} and 200. btcd answers 200 always.
func (s *Server) serveRPC(body []byte) (int, []byte) {
	if len(body) > 0 && body[0] == '[' {
		var reqs []rpcRequest
		if err := json.Unmarshal(body, &reqs); err != nil {
			return http.StatusInternalServerError, envelope(rpcRequest{ID: json.RawMessage("null")}, nil, &rpcErr{-32700, "Parse error"})
		}
		s.mu.Lock()
		s.batches++
		s.mu.Unlock()
		var out bytes.Buffer
		out.WriteByte('[')
		for i, req := range reqs {
			if i > 0 {
				out.WriteByte(',')
			}
			res, e := s.dispatch(req.Method, req.Params)
			out.Write(bytes.TrimSuffix(envelope(req, res, e), []byte("\n")))
		}
		out.WriteString("]\n")
		return http.StatusOK, out.Bytes()
	}
	var req rpcRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return http.StatusInternalServerError, envelope(rpcRequest{ID: json.RawMessage("null")}, nil, &rpcErr{-32700, "Parse error"})
	}
	res, e := s.dispatch(req.Method, req.Params)
	if req.JSONRPC == "2.0" && req.ID == nil {
		return http.StatusNoContent, nil
	}
	status := http.StatusOK
	if e != nil && req.JSONRPC != "2.0" && !s.opts.Btcd {
		status = http.StatusInternalServerError
		if e.Code == -32601 {
			status = http.StatusNotFound
		}
	}
	return status, envelope(req, res, e)
}

func envelope(req rpcRequest, result []byte, e *rpcErr) []byte {
	id := req.ID
	if id == nil {
		id = json.RawMessage("null")
	}
	var b bytes.Buffer
	if req.JSONRPC == "2.0" {
		b.WriteString(`{"jsonrpc":"2.0",`)
		if e != nil {
			eb, _ := json.Marshal(e)
			b.WriteString(`"error":`)
			b.Write(eb)
		} else {
			b.WriteString(`"result":`)
			b.Write(result)
		}
	} else {
		if e != nil {
			eb, _ := json.Marshal(e)
			b.WriteString(`{"result":null,"error":`)
			b.Write(eb)
		} else {
			b.WriteString(`{"result":`)
			b.Write(result)
			b.WriteString(`,"error":null`)
		}
	}
	b.WriteString(`,"id":`)
	b.Write(id)
	b.WriteString("}\n")
	return b.Bytes()
}
