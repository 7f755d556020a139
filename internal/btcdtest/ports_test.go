package btcdtest

import (
	"net"
	"net/http"
	"testing"
)

// TestLaunchMovesOffATakenPort: when another process holds the RPC port
// the node picked (here a server that refuses every request with 401, as
// another test's btcd with other credentials would), the first launch does
// not talk to it as if it were this node: btcd is started again on fresh
// ports and the node answers there with its own credentials.
func TestLaunchMovesOffATakenPort(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	other := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	})}
	go func() { _ = other.Serve(ln) }()
	defer other.Close()

	n, err := newNode(Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	taken := ln.Addr().String()
	n.rpcAddr = taken
	t.Cleanup(func() {
		if err := n.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	if err := n.Launch(); err != nil {
		t.Fatalf("Launch with a taken RPC port: %v", err)
	}
	if n.RPCHost() == taken {
		t.Fatalf("node still on the taken port %s", taken)
	}
	if _, h, err := n.BestBlock(testCtx(t)); err != nil || h != 0 {
		t.Fatalf("best block on the new port: height %d, %v", h, err)
	}
}
