package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/corefixture"
	"github.com/cfindexd/cfindexd/internal/daemontest"
	"github.com/cfindexd/cfindexd/internal/tcptest"
	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/netparams"
)

// runCLI runs the cfindexd binary with args to completion and returns its
// exit code, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(daemonBinary, args...)
	cmd.Env = daemontest.Environ()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return exitCode(err), stdout.String(), stderr.String()
	case <-time.After(testtime.Scale(60 * time.Second)):
		_ = cmd.Process.Kill()
		t.Fatalf("cfindexd %v did not finish", args)
	}
	return 0, "", ""
}

// TestServesTheStoreBeforeTheNodeAnswers: with its node down, a daemon
// whose store holds a chain serves it from the first second — health,
// readiness (503: the node is unreachable), metrics, filters over HTTP,
// light clients over P2P, and `cfindexd status` saying the node is not
// reachable — then follows the node once it is back.
func TestServesTheStoreBeforeTheNodeAnswers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(3*time.Minute))
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{Net: "simnet", TxIndex: true, WalletSeed: 91})
	if _, err := node.Generate(ctx, 110); err != nil {
		t.Fatal(err)
	}
	datadir := t.TempDir()
	httpAddr, p2pAddr := tcptest.FreeAddr(t), tcptest.FreeAddr(t)
	args := append(withoutFlag(withoutFlag(nodeArgs(node, "simnet", datadir), "httplisten"), "listen"),
		"--httplisten="+httpAddr, "--listen="+p2pAddr, "--pollinterval=200ms")
	first := startDaemon(t, args...)
	first.waitLog(60*time.Second, heightAtLeast(110))
	if code, _ := first.terminate(10 * time.Second); code != 0 {
		t.Fatalf("first run: exit %d", code)
	}
	hash100, err := node.BlockHash(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	filter100, _, err := node.FilterOf(ctx, hash100)
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Stop(); err != nil {
		t.Fatal(err)
	}

	d := startDaemon(t, args...)
	d.waitLog(20*time.Second, func(m map[string]any) bool {
		// The wait is logged with its unit.
		s, _ := m["retry_in"].(string)
		return m["message"] == "waiting for the node" && m["level"] == "warn" && regexp.MustCompile(`^[0-9.]+(ms|s)$`).MatchString(s)
	})
	base := "http://" + httpAddr
	waitHTTP(t, base+"/healthz", 200, "ok")
	// Readiness names the node from the first failed contact, before the
	// follower ever ran a round; so does the node_up series.
	waitHTTP(t, base+"/readyz", 503, `"reason":"node unreachable: `)
	waitHTTP(t, base+"/metrics", 200, "cfindexd_indexed_height 110")
	waitHTTP(t, base+"/metrics", 200, "cfindexd_node_up 0")
	st, _, body := get(t, fmt.Sprintf("%s/rest/blockfilter/basic/%s.bin", base, hash100), nil)
	if want := coreBlockFilter(hash100, filter100); st != 200 || !bytes.Equal(body, want) {
		t.Errorf("filter of block 100 while the node is down: %d %x, want %x", st, body, want)
	}
	peer := dialLightPeer(t, p2pAddr, node.Params())
	peer.Close()

	code, out, errOut := runCLI(t, "status", "--chain=simnet", "--httplisten="+httpAddr)
	t.Logf("cfindexd status:\n%s%s", out, errOut)
	if code != 0 || !strings.Contains(out, "NOT reachable") || !strings.Contains(out, "height 110") || !strings.Contains(out, "chain     simnet") {
		t.Errorf("status while the node is down: exit %d\n%s%s", code, out, errOut)
	}

	node.Restart(t)
	hashes, err := node.Generate(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	d.waitLog(60*time.Second, func(m map[string]any) bool {
		return m["message"] == "indexed block" && m["hash"] == hashes[1].String()
	})
	waitHTTP(t, base+"/readyz", 200, "")

	code, out, errOut = runCLI(t, "status", "--json", "--chain=simnet", "--httplisten="+httpAddr)
	var rep map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("status --json: exit %d\n%s%s", code, out, errOut)
	}
	nodeRep, _ := rep["node"].(map[string]any)
	if rep["chain"] != "simnet" || rep["indexed_height"] != 112.0 || rep["node_height"] != 112.0 || rep["progress_pct"] != 100.0 ||
		nodeRep["reachable"] != true || nodeRep["kind"] != "btcd" || nodeRep["prevout_source"] != "txindex-getrawtransaction" ||
		nodeRep["address"] != node.RPCHost() || rep["store_size_bytes"].(float64) <= 0 || rep["version"] != version || rep["uptime_seconds"].(float64) <= 0 {
		t.Errorf("status --json after the node came back:\n%s", out)
	}
	if code, _ := d.terminate(10 * time.Second); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
	code, _, errOut = runCLI(t, "status", "--chain=simnet", "--httplisten="+httpAddr)
	if code != 1 || !strings.Contains(errOut, "no cfindexd answers at http://"+httpAddr+"/status") {
		t.Errorf("status without a daemon: exit %d, %q", code, errOut)
	}
}

// TestStatusWithoutADaemonHints: when nothing answers, status says whose
// port it asked (the chain's default one) and how to ask another daemon:
// --chain, --conf or --httplisten, in one line.
func TestStatusWithoutADaemonHints(t *testing.T) {
	free := tcptest.FreeAddr(t)
	code, _, errOut := runCLI(t, "status", "--httplisten="+free)
	if code != 1 || !strings.Contains(errOut, "no cfindexd answers at http://"+free+"/status") || strings.Contains(errOut, "default HTTP port") ||
		!strings.Contains(errOut, "--chain=NAME, --conf=FILE") || !strings.Contains(errOut, "--httplisten=HOST:PORT") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("status at a free port: exit %d, stderr %q", code, errOut)
	}
	nw, err := netparams.Lookup("regtest")
	if err != nil {
		t.Fatal(err)
	}
	if conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(nw.HTTPPort))); err == nil {
		conn.Close()
		t.Skipf("something listens on regtest's default HTTP port %d", nw.HTTPPort)
	}
	code, _, errOut = runCLI(t, "status", "--chain=regtest")
	if code != 1 || !strings.Contains(errOut, "(regtest's default HTTP port)") || !strings.Contains(errOut, "--chain=NAME, --conf=FILE") {
		t.Errorf("status --chain=regtest: exit %d, stderr %q", code, errOut)
	}
}

// TestNodeRefusingLaterKeepsServing: a node that starts refusing
// cfindexd's credentials while cfindexd runs (here: btcd restarted with
// another password on the same address) does not stop cfindexd. It
// serves the store, logs at error level with a backoff that grows, and
// follows the node again once it accepts cfindexd.
func TestNodeRefusingLaterKeepsServing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(4*time.Minute))
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{Net: "simnet", TxIndex: true, WalletSeed: 93})
	if _, err := node.Generate(ctx, 105); err != nil {
		t.Fatal(err)
	}
	httpAddr := tcptest.FreeAddr(t)
	args := append(withoutFlag(nodeArgs(node, "simnet", t.TempDir()), "httplisten"), "--httplisten="+httpAddr, "--pollinterval=200ms")
	d := startDaemon(t, args...)
	d.waitLog(60*time.Second, heightAtLeast(105))
	if err := node.Stop(); err != nil {
		t.Fatal(err)
	}

	impostor := btcdtest.Start(t, btcdtest.Options{Net: "simnet", RPCPassword: "changed", Extra: []string{"--rpclisten=" + node.RPCHost()}})
	refused := func(m map[string]any) bool {
		return m["message"] == "the node refuses cfindexd's configuration; serving what the store holds and retrying" && m["level"] == "error" &&
			containsStr(m["error"], "HTTP 401")
	}
	first := d.waitLog(60*time.Second, refused)
	second := d.waitLogN(60*time.Second, 2, refused)
	r1, err1 := time.ParseDuration(first["retry_in"].(string))
	r2, err2 := time.ParseDuration(second["retry_in"].(string))
	if err1 != nil || err2 != nil || r1 < permanentMinBackoff/2 || r2 <= r1 {
		t.Errorf("retry_in %v then %v: want growing waits from %s", first["retry_in"], second["retry_in"], permanentMinBackoff/2)
	}
	waitHTTP(t, "http://"+httpAddr+"/healthz", 200, "ok")
	waitHTTP(t, "http://"+httpAddr+"/metrics", 200, "cfindexd_indexed_height 105")
	code, out, _ := runCLI(t, "status", "--chain=simnet", "--httplisten="+httpAddr)
	if code != 0 || !strings.Contains(out, "NOT reachable") || !strings.Contains(out, "HTTP 401") {
		t.Errorf("status: exit %d\n%s", code, out)
	}

	if err := impostor.Stop(); err != nil {
		t.Fatal(err)
	}
	node.Restart(t)
	hashes, err := node.Generate(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	d.waitLog(90*time.Second, func(m map[string]any) bool {
		return m["message"] == "indexed block" && m["hash"] == hashes[0].String()
	})
	if code, _ := d.terminate(10 * time.Second); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
}

// TestPrevoutSourceAgainstRecordedCore: a Bitcoin Core v31 without
// -rest=1 gets getblock verbosity 3 with a warning that states the
// measured cost; forcing the REST source there stops cfindexd at start
// naming -rest=1; and when the node restarts with REST on, cfindexd
// detects the source again and switches, saying so.
func TestPrevoutSourceAgainstRecordedCore(t *testing.T) {
	fx := corefixture.Load(t)

	t.Run("forced rest without -rest", func(t *testing.T) {
		srv := corefixture.NewServer(t, fx, corefixture.Options{DisableREST: true})
		d := startDaemon(t, append(coreArgs(srv, t.TempDir()), "--httplisten=", "--prevoutsource=rest")...)
		d.exitsWith(30*time.Second, "prevoutsource = rest", "-rest=1")
	})

	t.Run("re-detected when the node restarts", func(t *testing.T) {
		srv := corefixture.NewServer(t, fx, corefixture.Options{DisableREST: true})
		d := startDaemon(t, append(coreArgs(srv, t.TempDir()), "--httplisten=", "--pollinterval=100ms")...)
		d.waitLog(30*time.Second, func(m map[string]any) bool {
			return m["level"] == "warn" && m["mode"] == "getblock-verbosity3" &&
				containsStr(m["message"], "many times slower than REST") && containsStr(m["message"], "-rest=1")
		})
		d.waitLog(30*time.Second, heightAtLeast(115))
		srv.Restart(true)
		d.waitLog(30*time.Second, msgIs("node restarted; checking its options again"))
		d.waitLog(30*time.Second, func(m map[string]any) bool {
			return m["message"] == "prevout source changed" && m["from"] == "getblock-verbosity3" && m["to"] == "rest-spenttxouts"
		})
		if code, _ := d.terminate(10 * time.Second); code != 0 {
			t.Fatalf("SIGTERM: exit %d", code)
		}
	})
}
