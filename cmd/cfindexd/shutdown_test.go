package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/p2pclient"
	"github.com/cfindexd/cfindexd/internal/tcptest"
	"github.com/cfindexd/cfindexd/internal/testtime"
)

// shutdownGoal is how long SIGTERM may take at the tip by the daemon's own
// clock; shutdownSlack is added only for a loaded machine, and is far
// below the 2.6–4.2 s the daemon used to take with an idle HTTP
// connection open.
const (
	shutdownGoal  = time.Second
	shutdownSlack = time.Second
)

// TestSIGTERMAtTipIsFast runs the daemon at the tip of a btcd chain with
// what an operator's box has open at any moment: an HTTP keep-alive
// connection that served a request and sits idle, an HTTP connection that
// was opened but has not sent a request yet (a browser's preconnect, a
// load balancer's probe), two P2P light clients past the handshake, and
// blocks fetched over btcd's P2P port. SIGTERM must end it with exit 0,
// and the shutdown the daemon reports itself (from its signal to its last
// line, so a slow machine's process start-up does not count) must stay
// within a second.
func TestSIGTERMAtTipIsFast(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(2*time.Minute))
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{TxIndex: true, WalletSeed: 71})
	if _, err := node.Generate(ctx, 110); err != nil {
		t.Fatal(err)
	}
	httpAddr, p2pAddr := tcptest.FreeAddr(t), tcptest.FreeAddr(t)
	args := append(withoutFlag(withoutFlag(nodeArgs(node, "regtest", t.TempDir()), "httplisten"), "listen"),
		"--httplisten="+httpAddr, "--listen="+p2pAddr, "--pollinterval=100ms")
	d := startDaemon(t, args...)
	d.waitLog(60*time.Second, heightAtLeast(110))
	waitHTTP(t, "http://"+httpAddr+"/readyz", 200, "")

	// An idle keep-alive connection: one request answered, body read, the
	// connection kept by the transport.
	keepAlive := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer keepAlive.CloseIdleConnections()
	resp, err := keepAlive.Get("http://" + httpAddr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// A connection that has not sent its request yet.
	silent, err := net.Dial("tcp", httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	// Two light clients past the handshake.
	for range 2 {
		c := dialLightPeer(t, p2pAddr, node.Params())
		defer c.Close()
	}
	waitHTTP(t, "http://"+httpAddr+"/metrics", 200, "cfindexd_p2p_peers_connected 2")
	// One more block, so the daemon is at the tip having just fetched
	// over btcd's P2P port (its connection there is open).
	hashes, err := node.Generate(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	d.waitLog(30*time.Second, func(m map[string]any) bool {
		return m["message"] == "indexed block" && m["hash"] == hashes[0].String()
	})

	code, wall := d.terminate(30 * time.Second)
	if code != 0 {
		t.Fatalf("SIGTERM: exit %d, want 0", code)
	}
	stopped := d.waitLog(time.Second, msgIs("stopped"))
	took, err := time.ParseDuration(stopped["shutdown"].(string))
	if err != nil {
		t.Fatalf("stopped line: shutdown %v: %v", stopped["shutdown"], err)
	}
	t.Logf("SIGTERM to exit: daemon reports %s, wall clock %s", took, wall.Round(time.Millisecond))
	if took > shutdownGoal+shutdownSlack {
		t.Errorf("shutdown took %s by the daemon's clock, want within %s", took, shutdownGoal)
	}
}

// dialLightPeer connects to a P2P listener and completes the version
// handshake as a light client would, then leaves the connection idle.
func dialLightPeer(t *testing.T, addr string, params *chaincfg.Params) *p2pclient.Peer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := p2pclient.Dial(ctx, addr, p2pclient.Options{Params: params, Services: wire.SFNodeWitness, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("p2p handshake: %v", err)
	}
	return p
}
