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
	writeStatus(stdout, rep, sp)
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

// writeStatus prints the report for a person, one aspect per line, with
// the silent-payment index's height when the daemon exports one (sp).
func writeStatus(w io.Writer, r httpapi.StatusReport, sp *uint64) {
	up := time.Duration(r.UptimeSeconds * float64(time.Second)).Round(time.Second)
	fmt.Fprintf(w, "cfindexd %s (commit %s, %s), up %s\n", r.Version, r.Commit, r.GoVersion, up)
	fmt.Fprintf(w, "  chain     %s\n", r.Chain)
	node := r.Node.Address
	if r.Node.Kind != "" {
		node += "  " + r.Node.Kind
		if r.Node.Version != "" {
			node += " " + r.Node.Version
		}
	}
	if r.Node.Reachable {
		node += "  reachable"
	} else {
		node += "  NOT reachable"
	}
	fmt.Fprintf(w, "  node      %s\n", node)
	if r.Node.Error != "" {
		fmt.Fprintf(w, "            last error: %s\n", r.Node.Error)
	}
	if r.Node.PrevoutSource != "" {
		fmt.Fprintf(w, "  prevouts  %s\n", r.Node.PrevoutSource)
	}
	indexed := "nothing yet"
	if r.IndexedHeight != nil {
		indexed = fmt.Sprintf("height %d", *r.IndexedHeight)
	}
	if r.NodeHeight != nil {
		indexed += fmt.Sprintf(" of node height %d", *r.NodeHeight)
	}
	if r.ProgressPct != nil {
		indexed += fmt.Sprintf(" (%.1f %%)", *r.ProgressPct)
	}
	fmt.Fprintf(w, "  indexed   %s\n", indexed)
	if r.IndexedHash != "" {
		fmt.Fprintf(w, "  tip       %s\n", r.IndexedHash)
	}
	if sp != nil {
		writeSPStatus(w, *sp, r.IndexedHeight)
	}
	fmt.Fprintf(w, "  peers     %d light client(s) over P2P\n", r.Peers)
	for _, t := range r.Transports {
		fmt.Fprintf(w, "    %s      %d peer(s), %s in, %s out\n", t.Transport, t.Peers, humanBytes(t.BytesReceived), humanBytes(t.BytesSent))
	}
	fmt.Fprintf(w, "  store     %s  %s\n", humanBytes(r.StoreSizeBytes), r.StorePath)
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

// humanBytes renders a size with a binary unit.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
