package nodeclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// ErrRESTUnavailable means the REST interface answered like a server without
// REST handlers (404 with an empty non-text body, or 403).
var ErrRESTUnavailable = errors.New("REST interface not available (start Bitcoin Core with -rest=1, or set the REST URL)")

// RESTGet fetches base+path from the node's REST interface (no auth).
func (c *Client) RESTGet(ctx context.Context, path string) ([]byte, error) {
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	url := c.restURL + path
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, "GET "+path, err)
	}
	defer drainClose(resp.Body)
	body := &recordingReader{r: io.LimitReader(resp.Body, MaxResponseSize+1)}
	data, err := io.ReadAll(body)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("GET %s: %w", path, ctx.Err())
		}
		return nil, fmt.Errorf("GET %s: reading reply: %v: %w", path, err, ErrUnreachable)
	}
	if len(data) > MaxResponseSize {
		return nil, fmt.Errorf("%w: GET %s: reply larger than %d bytes", ErrMalformed, path, MaxResponseSize)
	}
	if resp.StatusCode == http.StatusOK {
		return data, nil
	}
	msg := strings.TrimSpace(string(data))
	isText := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain")
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable && strings.HasPrefix(msg, "Service temporarily unavailable"):
		// Core's REST during warm-up (CheckWarmup in src/rest.cpp).
		return nil, fmt.Errorf("GET %s: HTTP 503 %q: %w", path, msg, ErrWarmup)
	case resp.StatusCode == http.StatusServiceUnavailable:
		return nil, fmt.Errorf("GET %s: %w", path, unavailable(data))
	case resp.StatusCode == http.StatusForbidden,
		resp.StatusCode == http.StatusNotFound && !isText:
		return nil, fmt.Errorf("GET %s: HTTP %d: %w", path, resp.StatusCode, ErrRESTUnavailable)
	case resp.StatusCode == http.StatusNotFound && strings.Contains(msg, "pruned"):
		return nil, fmt.Errorf("GET %s: %q: %w", path, msg, ErrPruned)
	case resp.StatusCode == http.StatusNotFound && strings.HasSuffix(msg, "not found"):
		return nil, fmt.Errorf("GET %s: %q: %w", path, msg, ErrBlockNotFound)
	case resp.StatusCode == http.StatusNotFound:
		// Undo data missing for a block the node knows: treat like pruning.
		return nil, fmt.Errorf("GET %s: %q: %w", path, msg, ErrPruned)
	}
	return nil, fmt.Errorf("GET %s: HTTP %d %q", path, resp.StatusCode, msg)
}
