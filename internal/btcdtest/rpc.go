package btcdtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// rpcClient is the harness's own minimal JSON-RPC client, independent of the
// production client in package bitcoind so each can test the other.
type rpcClient struct {
	url        string
	user, pass string
	http       *http.Client
	nextID     atomic.Uint64
}

func newRPCClient(host, user, pass string) *rpcClient {
	return &rpcClient{
		url:  "http://" + host + "/",
		user: user,
		pass: pass,
		http: &http.Client{
			Transport: &http.Transport{
				MaxIdleConnsPerHost: 8,
				IdleConnTimeout:     30 * time.Second,
			},
		},
	}
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
	resp, err := c.http.Do(req)
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
	c.http.CloseIdleConnections()
}
