package btcdtest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// rpcClient is the harness's own minimal JSON-RPC client, independent of the
// production client in package nodeclient so each can test the other.
type rpcClient struct {
	url        string
	user, pass string
	nextID     atomic.Uint64
	// certPath is btcd's rpc.cert for a node with TLS; the HTTPS client
	// is made once btcd has written it.
	certPath string

	mu    sync.Mutex
	httpc *http.Client
}

func newRPCClient(host, user, pass string) *rpcClient {
	return &rpcClient{
		url:   "http://" + host + "/",
		user:  user,
		pass:  pass,
		httpc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8, IdleConnTimeout: 30 * time.Second}},
	}
}

// newTLSRPCClient talks HTTPS to a btcd whose certificate is at certPath.
func newTLSRPCClient(host, user, pass, certPath string) *rpcClient {
	return &rpcClient{url: "https://" + host + "/", user: user, pass: pass, certPath: certPath}
}

// client returns the HTTP client, reading btcd's certificate first for a
// TLS node (an error until btcd has written it).
func (c *rpcClient) client() (*http.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.httpc != nil {
		return c.httpc, nil
	}
	pem, err := os.ReadFile(c.certPath)
	if err != nil {
		return nil, fmt.Errorf("btcd's rpc.cert: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("btcd's rpc.cert %s: no certificate (yet)", c.certPath)
	}
	c.httpc = &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     30 * time.Second,
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}
	return c.httpc, nil
}

type rpcRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      uint64 `json:"id"`
	Method  string `json:"method"`
	Params  []any  `json:"params"`
}

type rpcResponse struct {
	Result json.RawMessage `json:"result"`
	Error  *RPCError       `json:"error"`
}

// call sends one request; result may be nil to discard the result.
func (c *rpcClient) call(ctx context.Context, method string, params []any, result any) error {
	if params == nil {
		params = []any{}
	}
	body, err := json.Marshal(rpcRequest{JSONRPC: "1.0", ID: c.nextID.Add(1), Method: method, Params: params})
	if err != nil {
		return fmt.Errorf("%s: encode request: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	req.SetBasicAuth(c.user, c.pass)
	req.Header.Set("Content-Type", "application/json")
	httpc, err := c.client()
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	resp, err := httpc.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s: read reply: %w", method, err)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("%s: %w", method, ErrAuth)
	}
	var reply rpcResponse
	if err := json.Unmarshal(raw, &reply); err != nil {
		return fmt.Errorf("%s: HTTP %d: decode reply %.200q: %w", method, resp.StatusCode, raw, err)
	}
	if reply.Error != nil {
		return fmt.Errorf("%s: %w", method, reply.Error)
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(reply.Result, result); err != nil {
		return fmt.Errorf("%s: decode result: %w", method, err)
	}
	return nil
}

func (c *rpcClient) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.httpc != nil {
		c.httpc.CloseIdleConnections()
	}
}

// batchCall is one request of a batch and, after batch returns, its
// outcome.
type batchCall struct {
	method string
	params []any
	result any // nil discards the result
	err    error
}

// batch sends calls as one JSON-RPC batch (btcd opens and closes a TCP
// connection per HTTP request, so batching saves a round trip and a
// connection per call). btcd runs the entries in order. The returned error
// is a transport failure; per-call errors are in calls[i].err.
func (c *rpcClient) batch(ctx context.Context, calls []batchCall) error {
	reqs := make([]rpcRequest, len(calls))
	byID := make(map[uint64]int, len(calls))
	for i := range calls {
		params := calls[i].params
		if params == nil {
			params = []any{}
		}
		id := c.nextID.Add(1)
		reqs[i] = rpcRequest{JSONRPC: "1.0", ID: id, Method: calls[i].method, Params: params}
		byID[id] = i
	}
	body, err := json.Marshal(reqs)
	if err != nil {
		return fmt.Errorf("batch: encode: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	req.SetBasicAuth(c.user, c.pass)
	req.Header.Set("Content-Type", "application/json")
	httpc, err := c.client()
	if err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	resp, err := httpc.Do(req)
	if err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("batch: read reply: %w", err)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("batch: %w", ErrAuth)
	}
	var replies []struct {
		ID     uint64          `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	if err := json.Unmarshal(raw, &replies); err != nil {
		return fmt.Errorf("batch: HTTP %d: decode reply %.200q: %w", resp.StatusCode, raw, err)
	}
	seen := make([]bool, len(calls))
	for _, r := range replies {
		i, ok := byID[r.ID]
		if !ok || seen[i] {
			return fmt.Errorf("batch: reply for unknown or repeated id %d", r.ID)
		}
		seen[i] = true
		call := &calls[i]
		switch {
		case r.Error != nil:
			call.err = fmt.Errorf("%s: %w", call.method, r.Error)
		case call.result != nil:
			if err := json.Unmarshal(r.Result, call.result); err != nil {
				call.err = fmt.Errorf("%s: decode result: %w", call.method, err)
			}
		}
	}
	for i, ok := range seen {
		if !ok {
			calls[i].err = fmt.Errorf("%s: no reply in batch", calls[i].method)
		}
	}
	return nil
}
