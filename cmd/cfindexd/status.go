package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cfindexd/cfindexd/cmd/cfindexd/internal/statusreport"
	"github.com/cfindexd/cfindexd/httpapi"
	"github.com/cfindexd/cfindexd/netparams"
	"github.com/cfindexd/cfindexd/p2p"
)

// statusTimeout bounds `cfindexd status`'s request to the daemon.
const statusTimeout = 10 * time.Second

// runStatus is `cfindexd status [--json] [--conf=FILE] [--key=value ...]`:
// it reads the configuration as the daemon does (to learn httplisten),
// asks the running daemon's GET /status and prints it for a person (with
// the silent-payment index's height from /metrics), or as JSON with
// --json. Exit 0 when the daemon answered, 1 when it did not, 2 for a bad
// configuration.
func runStatus(args, environ []string, stdout, stderr io.Writer) int {
	asJSON := false
	configArgs := make([]string, 0, len(args))
	for _, a := range args {
		switch a {
		case "--json", "-json", "--json=true":
			asJSON = true
		default:
			configArgs = append(configArgs, a)
		}
	}
	cfg, err := loadConfig(configArgs, environ, stdout)
	if code, done := configDone("cfindexd status", err, stdout, stderr); done {
		return code
	}
	if cfg.HTTPListen == "" {
		fmt.Fprintln(stderr, "cfindexd status: httplisten is empty, so the daemon serves no /status (set httplisten, or pass --httplisten=host:port of the running daemon)")
		return 2
	}
	url := "http://" + dialAddr(cfg.HTTPListen) + "/status"
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	body, err := fetchStatus(ctx, url, askedPort(cfg))
	if err != nil {
		fmt.Fprintf(stderr, "cfindexd status: %v\n", err)
		return 1
	}
	if asJSON {
		var out bytes.Buffer
		if err := json.Indent(&out, body, "", "  "); err != nil {
			fmt.Fprintf(stderr, "cfindexd status: %s answered no JSON: %v\n", url, err)
			return 1
		}
		out.WriteByte('\n')
		_, _ = stdout.Write(out.Bytes())
		return 0
	}
	var rep httpapi.StatusReport
	if err := json.Unmarshal(body, &rep); err != nil {
		fmt.Fprintf(stderr, "cfindexd status: %s answered no status: %v\n", url, err)
		return 1
	}
	var sp *uint64
	if h, ok := fetchSPHeight(ctx, strings.TrimSuffix(url, "/status")); ok {
		sp = &h
	}
	statusreport.Write(stdout, rep, sp)
	return 0
}

// dialAddr turns a listen address into one to connect to: an unspecified
// host (every interface) is reached on loopback.
func dialAddr(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}

// askedPort says, for "no cfindexd answers", when status asked the chain's
// default HTTP port; empty otherwise.
func askedPort(cfg Config) string {
	if nw, err := netparams.Lookup(cfg.Chain); err == nil && cfg.HTTPListen == net.JoinHostPort("127.0.0.1", strconv.Itoa(nw.HTTPPort)) {
		return " (" + nw.Name + "'s default HTTP port)"
	}
	return ""
}

// fetchStatus GETs url and returns the body of a 200. When nothing
// answers, the error names url and what follows it (askedPort), and says
// how to ask another daemon.
func fetchStatus(ctx context.Context, url, asked string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("no cfindexd answers at %s%s: %w; is it running? For a daemon on another chain or port pass --chain=NAME, --conf=FILE (the daemon's configuration) or --httplisten=HOST:PORT", url, asked, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d %q (an older cfindexd, or not cfindexd?)", url, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// transportStatus converts the P2P server's transport statistics for
// /status.
func transportStatus(stats []p2p.TransportStat) []httpapi.TransportStatus {
	out := make([]httpapi.TransportStatus, len(stats))
	for i, t := range stats {
		out[i] = httpapi.TransportStatus{Transport: t.Transport, Peers: t.Peers, BytesReceived: t.BytesReceived, BytesSent: t.BytesSent}
	}
	return out
}
