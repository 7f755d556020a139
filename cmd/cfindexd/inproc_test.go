package main

import (
	"context"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/daemontest"
	"github.com/cfindexd/cfindexd/internal/tcptest"
	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/netparams"
)

// startInProcess runs the daemon in this test process on a network whose
// default ports the test chose (a real btcd's instead of the chain's fixed
// ones, which another process on a busy machine may hold), with the same
// log-line API as the process tests. Ending the test cancels it.
func startInProcess(t *testing.T, nw netparams.Network, args ...string) *daemonProc {
	t.Helper()
	cfg, err := loadConfig(append([]string{"--logformat=json", "--loglevel=debug"}, args...), []string{"HOME=" + os.Getenv("HOME")}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	log := newLogger(cfg, pw)
	ctx, cancel := context.WithCancel(context.Background())
	d := &daemonProc{t: t, log: daemontest.NewLog(), done: make(chan struct{}), cancel: cancel}
	errc := make(chan error, 1)
	go func() {
		err := runDaemonOn(ctx, cfg, nw, "", log, false)
		_ = pw.Close()
		errc <- err
	}()
	go func() {
		d.log.Collect(pr)
		_, _ = io.Copy(io.Discard, pr)
		d.err = <-errc
		close(d.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-d.done
		if t.Failed() {
			d.dump()
		}
	})
	return d
}

// regtestWithPorts is regtest whose default node ports are the given ones.
func regtestWithPorts(t *testing.T, rpcCore, rpcBtcd, p2p string) netparams.Network {
	t.Helper()
	nw, err := netparams.Lookup("regtest")
	if err != nil {
		t.Fatal(err)
	}
	atoi := func(s string) int {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if rpcCore != "" {
		nw.RPCPort = atoi(rpcCore)
	}
	if rpcBtcd != "" {
		nw.BtcdRPCPort = atoi(rpcBtcd)
	}
	if p2p != "" {
		nw.NodeP2PPort = p2p
	}
	return nw
}

func portOf(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// nodep2p = auto looks on the RPC host at the chain's node P2P port. With
// that port injected: the node's own P2P port is used; an unrelated node
// of the same network (another chain), a node of another network, or
// nothing at all there leave the blocks to JSON-RPC after one info line —
// and the catch-up completes either way.
func TestNodeP2PAutoChecksThePeer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(3*time.Minute))
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{TxIndex: true, WalletSeed: 33})
	if _, err := node.Generate(ctx, 120); err != nil {
		t.Fatal(err)
	}
	unrelated := btcdtest.Start(t, btcdtest.Options{WalletSeed: 34})
	if _, err := unrelated.Generate(ctx, 3); err != nil {
		t.Fatal(err)
	}
	simnet := btcdtest.Start(t, btcdtest.Options{Net: "simnet"})

	for _, tc := range []struct {
		name, p2p string
		want      func(map[string]any) bool
	}{
		{"the node itself", node.P2PAddr(), func(m map[string]any) bool {
			return m["message"] == "fetching blocks over the node's P2P port" && m["nodep2p"] == node.P2PAddr()
		}},
		{"another chain", unrelated.P2PAddr(), func(m map[string]any) bool {
			return m["message"] == "not fetching blocks over P2P from an address that is not the node's P2P port; using JSON-RPC" &&
				m["level"] == "info" && containsStr(m["error"], "does not serve block 1")
		}},
		{"another network", simnet.P2PAddr(), func(m map[string]any) bool {
			return m["message"] == "not fetching blocks over P2P from an address that is not the node's P2P port; using JSON-RPC" &&
				m["level"] == "info" && containsStr(m["error"], "it is a node on simnet, but cfindexd follows regtest")
		}},
		{"nothing listening", tcptest.RefusedAddr(t), func(m map[string]any) bool {
			return m["message"] == "cannot fetch blocks over the node's P2P port; using JSON-RPC and retrying every few seconds" && m["level"] == "info"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nw := regtestWithPorts(t, "", "", portOf(t, tc.p2p))
			d := startInProcess(t, nw, withoutFlag(nodeArgs(node, "regtest", t.TempDir()), "nodep2p")...)
			d.waitLog(60*time.Second, tc.want)
			d.waitLog(60*time.Second, heightAtLeast(120))
		})
	}
}

func containsStr(v any, sub string) bool {
	s, ok := v.(string)
	return ok && strings.Contains(s, sub)
}

// rpcport = 0 tries the chain's Bitcoin Core port, then btcd's, and logs
// which answered; with those ports injected, a btcd on "its" port is found
// while nothing listens on Core's.
func TestRPCPortZeroFindsBtcd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(2*time.Minute))
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{TxIndex: true, WalletSeed: 35})
	if _, err := node.Generate(ctx, 20); err != nil {
		t.Fatal(err)
	}
	nw := regtestWithPorts(t, portOf(t, tcptest.RefusedAddr(t)), portOf(t, node.RPCHost()), "")
	d := startInProcess(t, nw, append(withoutFlag(nodeArgs(node, "regtest", t.TempDir()), "rpcport"), "--rpcport=0")...)
	d.waitLog(30*time.Second, func(m map[string]any) bool {
		return m["message"] == "node answers" && m["node"] == node.RPCHost() && m["port"] == "btcd's regtest port"
	})
	d.waitLog(60*time.Second, heightAtLeast(20))
}

// A btcd user who left rpcuser out is stopped at start and told why the
// cookie is missing: a node answers on btcd's port, and btcd writes no
// cookie.
func TestMissingCookieNamesBtcd(t *testing.T) {
	node := btcdtest.Start(t, btcdtest.Options{WalletSeed: 36})
	nw := regtestWithPorts(t, portOf(t, tcptest.RefusedAddr(t)), portOf(t, node.RPCHost()), "")
	args := withoutFlag(withoutFlag(withoutFlag(nodeArgs(node, "regtest", t.TempDir()), "rpcport"), "rpcuser"), "rpcpassword")
	d := startInProcess(t, nw, append(args, "--rpcport=0", "--bitcoindatadir="+t.TempDir())...)
	select {
	case <-d.done:
	case <-time.After(testtime.Scale(30 * time.Second)):
		t.Fatal("cfindexd still runs without credentials for btcd")
	}
	want := "a node answers at " + node.RPCHost() + " (btcd's regtest port), so it writes no cookie there: btcd writes none, set rpcuser and rpcpassword"
	if d.err == nil || !strings.Contains(d.err.Error(), "read cookie file") || !strings.Contains(d.err.Error(), want) {
		t.Fatalf("cfindexd stopped with %v, want an error saying %q", d.err, want)
	}
}
