package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// spServer is one tweak server cfscan sp asks, by its base URL. Requests
// carry only heights and block hashes: nothing of the wallet's keys.
type spServer struct {
	base    string // without a trailing slash
	client  *http.Client
	timeout time.Duration
	read    atomic.Int64 // body bytes received
}

// newSPServer checks raw is an http(s) URL and returns its server.
func newSPServer(raw string, client *http.Client, timeout time.Duration) (*spServer, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("--server %q: want an http:// or https:// URL without query", raw)
	}
	return &spServer{base: strings.TrimSuffix(u.String(), "/"), client: client, timeout: timeout}, nil
}

// String names the server in reports and errors.
func (s *spServer) String() string { return s.base }

// get fetches path and returns its body, refusing a status other than 200
// and a body of more than limit bytes (read no further than limit+1).
func (s *spServer) get(ctx context.Context, path string, limit int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("%s%s: %w", s.base, path, err)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s%s: %w", s.base, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	s.read.Add(int64(len(body)))
	if err != nil {
		return nil, fmt.Errorf("%s%s: %w", s.base, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s%s: %s: %.200q", s.base, path, resp.Status, strings.TrimSpace(string(body)))
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("%w: %s%s: more than %d bytes", errSPFormat, s.base, path, limit)
	}
	return body, nil
}

// newSPHTTPClient is the client of every server: it follows no redirect,
// so each server answers for itself.
func newSPHTTPClient() *http.Client {
	return &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
