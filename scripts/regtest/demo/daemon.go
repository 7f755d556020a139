package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
)

const (
	// daemonPackage is what the demo builds and runs.
	daemonPackage = "github.com/cfindexd/cfindexd/cmd/cfindexd"
	// daemonStopGrace is how long cfindexd may take to finish its batch.
	daemonStopGrace = 15 * time.Second
	// catchUpTimeout bounds cfindexd's catch-up with the demo chain.
	catchUpTimeout = 2 * time.Minute
)

// buildDaemon builds cfindexd into stateDir with the go command (the demo
// runs inside this module, so it builds this tree's cfindexd).
func buildDaemon(ctx context.Context, stateDir string) (string, error) {
	bin := filepath.Join(stateDir, "cfindexd")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, daemonPackage)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w: %s", daemonPackage, err, strings.TrimSpace(string(out)))
	}
	return bin, nil
}

// daemon is a running cfindexd.
type daemon struct {
	proc     *child
	p2pAddr  string
	httpAddr string
	http     *http.Client
}

// startDaemon runs cfindexd on regtest against the node, with its P2P and
// HTTP listeners on free loopback ports and its data in the state
// directory. waitCaughtUp reads its progress from /readyz.
func startDaemon(stateDir, bin string, node regtestNode) (*daemon, error) {
	p2pPort, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	httpPort, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	d := &daemon{
		p2pAddr:  "127.0.0.1:" + strconv.Itoa(p2pPort),
		httpAddr: "127.0.0.1:" + strconv.Itoa(httpPort),
		http:     &http.Client{Timeout: 10 * time.Second},
	}
	args := append([]string{
		"--chain=regtest", "--datadir=" + filepath.Join(stateDir, "cfindexd-data"),
		"--listen=" + d.p2pAddr, "--httplisten=" + d.httpAddr,
		"--relaytx=true", "--peerbloomfilters=true", "--readyblocks=1", "--pollinterval=200ms",
		"--logformat=json", "--loglevel=info",
	}, node.DaemonArgs()...)
	d.proc, err = startChild(stateDir, "cfindexd", bin, daemonEnv(), args...)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// daemonEnv is the demo's environment without CFINDEXD_* variables, so a
// configuration meant for a real cfindexd does not leak into the demo.
func daemonEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CFINDEXD_") {
			env = append(env, kv)
		}
	}
	return env
}

// readiness is the part of /readyz the demo reads.
type readiness struct {
	Ready         bool   `json:"ready"`
	Reason        string `json:"reason"`
	IndexedHeight *int64 `json:"indexed_height"`
}

// waitCaughtUp polls /readyz until cfindexd has indexed height.
func (d *daemon) waitCaughtUp(ctx context.Context, height int32) error {
	deadline := time.Now().Add(catchUpTimeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := "no answer"
	for {
		var rd readiness
		status, err := d.getJSON(ctx, "/readyz", &rd)
		switch {
		case err != nil:
			last = err.Error()
		case rd.Ready && rd.IndexedHeight != nil && *rd.IndexedHeight >= int64(height):
			return nil
		default:
			last = fmt.Sprintf("%d %s", status, rd.Reason)
		}
		if gone, why := d.proc.exited(); gone {
			return why
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cfindexd not caught up with height %d within %v (last /readyz: %s; see %s)", height, catchUpTimeout, last, d.proc.logPath)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// tipAt returns the block hash and filter header cfindexd serves at height,
// through its Core-compatible REST endpoints.
func (d *daemon) tipAt(ctx context.Context, height int32) (chainhash.Hash, chainhash.Hash, error) {
	var bh struct {
		BlockHash string `json:"blockhash"`
	}
	if _, err := d.getJSON(ctx, fmt.Sprintf("/rest/blockhashbyheight/%d.json", height), &bh); err != nil {
		return chainhash.Hash{}, chainhash.Hash{}, err
	}
	hash, err := chainhash.NewHashFromStr(bh.BlockHash)
	if err != nil {
		return chainhash.Hash{}, chainhash.Hash{}, fmt.Errorf("blockhashbyheight: %w", err)
	}
	var fhs []string
	if _, err := d.getJSON(ctx, fmt.Sprintf("/rest/blockfilterheaders/basic/%s.json?count=1", hash), &fhs); err != nil {
		return chainhash.Hash{}, chainhash.Hash{}, err
	}
	if len(fhs) != 1 {
		return chainhash.Hash{}, chainhash.Hash{}, fmt.Errorf("blockfilterheaders at %s: %d headers, want 1", hash, len(fhs))
	}
	fh, err := chainhash.NewHashFromStr(fhs[0])
	if err != nil {
		return chainhash.Hash{}, chainhash.Hash{}, fmt.Errorf("blockfilterheaders: %w", err)
	}
	return *hash, *fh, nil
}

// getJSON GETs path from cfindexd's HTTP server and decodes its JSON body
// (whatever the status, since /readyz answers 503 with JSON too).
func (d *daemon) getJSON(ctx context.Context, path string, v any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.httpAddr+path, nil)
	if err != nil {
		return 0, err
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("GET %s: %w", path, err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return resp.StatusCode, fmt.Errorf("GET %s: %d %.200q: %w", path, resp.StatusCode, body, err)
	}
	return resp.StatusCode, nil
}

// stop ends cfindexd with SIGTERM (it finishes its batch), then SIGKILL.
func (d *daemon) stop() error { return d.proc.stop(daemonStopGrace) }
