package nodeclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// MaxResponseSize bounds one HTTP response body read from the node. A
// getblock verbosity 3 reply for a full 4 MB block with thousands of inputs
// is in the tens of megabytes; this leaves ample room while keeping a
// misbehaving server from exhausting memory.
const MaxResponseSize = 512 << 20

// jsonRPCVersion is sent in every request. btcd rejects requests without a
// "jsonrpc" member; Core answers a 1.0 request with the legacy envelope
// {"result","error","id"} and HTTP 500 (404 for an unknown method) on
// errors, which this client decodes as well as 200.
const jsonRPCVersion = "1.0"

// Client talks JSON-RPC (and REST) to one Bitcoin Core or btcd node over
// HTTP keep-alive connections. It is safe for concurrent use.
type Client struct {
	cfg     Config
	log     zerolog.Logger
	http    *http.Client
	rpcURL  string
	restURL string
	creds   *credentials
	timeout time.Duration
	nextID  atomic.Uint64
	bufs    replyBuffers
	// kind is the NodeKind GetNodeInfo last found, for messages in the
	// node's own words.
	kind atomic.Int32
}

// NewClient validates cfg and returns a client. It does not contact the
// node; the first call does.
func NewClient(cfg Config, log zerolog.Logger) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	transport := &http.Transport{
		Proxy:               nil, // the node is local or explicitly addressed; never via $HTTP_PROXY
		MaxIdleConns:        16,
		MaxIdleConnsPerHost: 16,
		MaxConnsPerHost:     cfg.MaxConns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	scheme := "http://"
	if cfg.RPCCert != "" {
		scheme = "https://"
		transport.TLSClientConfig = (&certPool{path: cfg.RPCCert}).tlsConfig()
		transport.TLSHandshakeTimeout = 10 * time.Second
	}
	return &Client{
		cfg:     cfg,
		log:     log,
		http:    &http.Client{Transport: transport},
		rpcURL:  scheme + cfg.Host + "/",
		restURL: cfg.restBase(),
		creds:   &credentials{user: cfg.User, password: cfg.Password, cookieFile: cfg.CookieFile},
		timeout: timeout,
	}, nil
}

// Close releases idle connections.
func (c *Client) Close() {
	c.http.CloseIdleConnections()
}

type request struct {
	JSONRPC string `json:"jsonrpc"`
	ID      uint64 `json:"id"`
	Method  string `json:"method"`
	Params  []any  `json:"params"`
}

type response struct {
	Result any       `json:"result"`
	Error  *RPCError `json:"error"`
}

// Call invokes method with params and decodes the "result" member straight
// into result (a pointer, or nil to discard it). A JSON-RPC error object is
// returned as *RPCError, which matches the package sentinels.
func (c *Client) Call(ctx context.Context, method string, params []any, result any) error {
	if params == nil {
		params = []any{}
	}
	body, err := json.Marshal(request{JSONRPC: jsonRPCVersion, ID: c.nextID.Add(1), Method: method, Params: params})
	if err != nil {
		return fmt.Errorf("%s: encode request: %w", method, err)
	}
	if result == nil {
		result = new(json.RawMessage)
	}
	return c.post(ctx, method, body, func(status int, r io.Reader) error {
		return decodeResponse(method, status, r, result)
	})
}

// BatchCall is one element of a CallBatch.
type BatchCall struct {
	Method string
	Params []any
	// Result receives the decoded "result" member (a pointer, or nil).
	Result any
	// Err is set by CallBatch for this element (an *RPCError or a decode
	// error).
	Err error
}

type batchResponse struct {
	Result json.RawMessage `json:"result"`
	Error  *RPCError       `json:"error"`
	ID     uint64          `json:"id"`
}

// CallBatch sends calls as one JSON-RPC batch (a JSON array in one HTTP
// request), which both Core and btcd answer with an array of replies. The
// returned error is for the exchange as a whole; per-call errors are in
// calls[i].Err.
func (c *Client) CallBatch(ctx context.Context, calls []BatchCall) error {
	if len(calls) == 0 {
		return nil
	}
	first := c.nextID.Add(uint64(len(calls))) - uint64(len(calls)) + 1
	reqs := make([]request, len(calls))
	for i, call := range calls {
		params := call.Params
		if params == nil {
			params = []any{}
		}
		reqs[i] = request{JSONRPC: jsonRPCVersion, ID: first + uint64(i), Method: call.Method, Params: params}
	}
	body, err := json.Marshal(reqs)
	if err != nil {
		return fmt.Errorf("batch of %d %s: encode request: %w", len(calls), calls[0].Method, err)
	}
	label := fmt.Sprintf("batch of %d %s", len(calls), calls[0].Method)
	return c.post(ctx, label, body, func(status int, r io.Reader) error {
		var replies []batchResponse
		if err := json.NewDecoder(r).Decode(&replies); err != nil {
			return fmt.Errorf("%w: %s: decode reply (HTTP %d): %v", ErrMalformed, label, status, err)
		}
		seen := make([]bool, len(calls))
		for _, rep := range replies {
			if rep.ID < first || rep.ID >= first+uint64(len(calls)) {
				continue
			}
			i := int(rep.ID - first)
			if seen[i] {
				continue
			}
			seen[i] = true
			call := &calls[i]
			switch {
			case rep.Error != nil:
				rep.Error.Method = call.Method
				call.Err = rep.Error
			case call.Result != nil:
				if err := json.Unmarshal(rep.Result, call.Result); err != nil {
					call.Err = fmt.Errorf("%w: %s: decode result: %v", ErrMalformed, call.Method, err)
				}
			}
		}
		for i := range calls {
			if !seen[i] {
				calls[i].Err = fmt.Errorf("%w: %s: no reply in batch", ErrMalformed, calls[i].Method)
			}
		}
		return nil
	})
}

// Busy nodes: btcd turns a request away with HTTP 503 "Too busy" while
// rpcmaxclients (10 by default) requests are in flight, and Core with
// "Work queue depth exceeded" while its work queue (-rpcworkqueue) is
// full. Both clear as soon as another request finishes, so post sends such
// a request again after busyBackoff, doubling, up to busyRetries times
// (about 3 s in all) before it returns the error: a burst of concurrent
// requests (the fetch workers, the block proxy, the mempool mirror) must
// not fail a whole catch-up round, whose retry waits seconds.
const (
	busyRetries = 6
	busyBackoff = 50 * time.Millisecond
)

// errNodeBusy marks a 503 that means the node's RPC server is busy.
var errNodeBusy = errors.New("node busy")

// post sends one JSON-RPC HTTP request and hands a JSON reply body to
// decode. It re-reads the cookie and retries once after a 401, and retries
// a request the node turned away as busy (busyRetries).
func (c *Client) post(ctx context.Context, what string, body []byte, decode func(status int, r io.Reader) error) error {
	cookieRetried, busy := false, 0
	for {
		user, password, cookie, err := c.creds.get()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		cctx, cancel := context.WithTimeout(ctx, c.timeout)
		req, err := http.NewRequestWithContext(cctx, http.MethodPost, c.rpcURL, bytes.NewReader(body))
		if err != nil {
			cancel()
			return fmt.Errorf("%s: %w", what, err)
		}
		req.SetBasicAuth(user, password)
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.http.Do(req)
		if err != nil {
			cancel()
			return c.transportError(ctx, what, err)
		}
		reply := &recordingReader{r: resp.Body}
		retry, err := c.handleReply(what, resp, reply, !cookieRetried, cookie, decode)
		timedOut := cctx.Err() != nil
		drainClose(resp.Body)
		cancel()
		if retry {
			cookieRetried = true
			c.log.Info().Str("cookie", c.cfg.CookieFile).Msg("node rejected credentials; re-read cookie file, retrying")
			continue
		}
		if errors.Is(err, errNodeBusy) && busy < busyRetries {
			wait := busyBackoff << busy
			busy++
			t := time.NewTimer(wait)
			select {
			case <-t.C:
				continue
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("%s: %w", what, ctx.Err())
			}
		}
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case timedOut:
			return fmt.Errorf("%s: reply from %s not complete within %s: %w", what, c.cfg.Host, c.timeout, ErrUnreachable)
		case reply.err != nil:
			return fmt.Errorf("%s: reading reply from %s: %v: %w", what, c.cfg.Host, reply.err, ErrUnreachable)
		}
		return err
	}
}

func (c *Client) handleReply(what string, resp *http.Response, body io.Reader, firstAttempt bool, cookie string, decode func(int, io.Reader) error) (retry bool, err error) {
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		if firstAttempt && c.creds.refresh(cookie) {
			return true, nil
		}
		if c.cfg.CookieFile != "" {
			// The node rewrites its cookie when it restarts: this heals.
			return false, fmt.Errorf("%s: HTTP 401 with the cookie from %s: %w", what, c.cfg.CookieFile, ErrAuth)
		}
		return false, permanent(fmt.Errorf("%s: HTTP 401: the node rejects rpcuser %q and its rpcpassword: %w", what, c.cfg.User, ErrAuth))
	case http.StatusForbidden:
		return false, permanent(fmt.Errorf("%s: HTTP 403: the node does not allow our address (Bitcoin Core's -rpcallowip): %w", what, ErrAuth))
	case http.StatusServiceUnavailable:
		snippet, _ := io.ReadAll(io.LimitReader(body, 200))
		return false, fmt.Errorf("%s: %w", what, unavailable(snippet))
	}
	if !strings.Contains(resp.Header.Get("Content-Type"), "json") {
		snippet, _ := io.ReadAll(io.LimitReader(body, 200))
		if err := c.tlsMismatch(nil, resp.StatusCode, snippet); err != nil {
			return false, fmt.Errorf("%s: %w", what, err)
		}
		return false, fmt.Errorf("%w: %s: HTTP %d %q (is %s the RPC port of Bitcoin Core or btcd?)", ErrMalformed, what, resp.StatusCode, strings.TrimSpace(string(snippet)), c.cfg.Host)
	}
	return false, decode(resp.StatusCode, io.LimitReader(body, MaxResponseSize))
}

// transportError classifies an error from http.Client.Do.
func (c *Client) transportError(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: no reply from %s within %s: %w", what, c.cfg.Host, c.timeout, ErrUnreachable)
	}
	var hs *handshakeError
	if errors.As(err, &hs) {
		return fmt.Errorf("%s: %w", what, hs.err)
	}
	if tlsErr := c.tlsMismatch(err, 0, nil); tlsErr != nil {
		return fmt.Errorf("%s: %w", what, tlsErr)
	}
	return fmt.Errorf("%s: %v (is the node running and %s?): %w", what, err, c.listenHint(), ErrUnreachable)
}

// listenHint names the node's settings for where it listens for RPC, in
// its own words: Core's -rpcbind/-rpcport, btcd's --rpclisten (a client
// with rpccert set talks to btcd: Core has no TLS), both while unknown.
func (c *Client) listenHint() string {
	kind := NodeKind(c.kind.Load())
	if kind == NodeUnknown && c.cfg.RPCCert != "" {
		kind = NodeBtcd
	}
	switch kind {
	case NodeCore:
		return fmt.Sprintf("-rpcbind/-rpcport set to %s", c.cfg.Host)
	case NodeBtcd:
		return fmt.Sprintf("--rpclisten set to %s", c.cfg.Host)
	}
	return fmt.Sprintf("listening for RPC on %s: Bitcoin Core's -rpcbind/-rpcport, btcd's --rpclisten", c.cfg.Host)
}

// unavailable classifies an HTTP 503 from the node by its body: Bitcoin
// Core's "Request rejected during server shutdown" (the node is stopping,
// which heals when it is back), and otherwise the two causes Core has for
// a 503 on RPC: a full work queue ("Work queue depth exceeded") or a
// shutdown that older versions answer with libevent's bare 503 page; and
// btcd's at its client limit ("Too busy"). A full work queue and btcd's
// limit are errNodeBusy too.
func unavailable(body []byte) error {
	msg := strings.TrimSpace(string(body))
	switch {
	case strings.Contains(msg, "Request rejected during server shutdown"):
		return fmt.Errorf("HTTP 503 %q: the node is shutting down: %w", msg, ErrUnreachable)
	case strings.Contains(msg, "Work queue depth exceeded"):
		return fmt.Errorf("HTTP 503 %q: RPC work queue full (raise -rpcworkqueue): %w%.0w", msg, ErrUnreachable, errNodeBusy)
	case strings.Contains(msg, "Too busy"):
		return fmt.Errorf("HTTP 503 %q: the node's RPC server is at its client limit (btcd's rpcmaxclients): %w%.0w", msg, ErrUnreachable, errNodeBusy)
	}
	return fmt.Errorf("HTTP 503 %q: RPC work queue full (raise -rpcworkqueue) or the node is shutting down: %w", msg, ErrUnreachable)
}

func drainClose(body io.ReadCloser) {
	// Reading the rest lets the transport reuse the connection.
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
	_ = body.Close()
}

// recordingReader remembers a transport error (not EOF) met while a decoder
// read the body, so that a connection dropped mid-reply is reported as
// ErrUnreachable rather than as a malformed reply.
type recordingReader struct {
	r   io.Reader
	err error
}

// Read implements io.Reader.
func (r *recordingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return n, err
}
