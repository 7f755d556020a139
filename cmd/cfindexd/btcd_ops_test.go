package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/p2pclient"
	"github.com/cfindexd/cfindexd/internal/tcptest"
	"github.com/cfindexd/cfindexd/internal/testtime"
)

// exitsWith waits for the daemon to exit by itself and checks that it
// failed and that its last line, the reason, contains every want.
func (d *daemonProc) exitsWith(limit time.Duration, want ...string) string {
	d.t.Helper()
	code, last := d.wait(limit)
	d.t.Logf("exit %d: %s", code, last)
	if code == 0 {
		d.t.Fatalf("exit 0, want a failure; last line %q", last)
	}
	if !strings.HasPrefix(last, "cfindexd: ") {
		d.t.Errorf("last line %q is not the daemon's one-line reason", last)
	}
	for _, w := range want {
		if !strings.Contains(last, w) {
			d.t.Errorf("last line %q does not say %q", last, w)
		}
	}
	return last
}

// btcdArgs point cfindexd at n with rpcuser/rpcpassword; TLS options are
// the caller's.
func btcdArgs(n *btcdtest.Node, chain, datadir string) []string {
	return nodeArgs(n, chain, datadir)
}

// TestBtcdWithTLS runs btcd as it runs by default, with TLS on its RPC
// port: cfindexd follows it given rpccert (written with ~ and $HOME, which
// must expand) and serves a light client's getdata through the peers' own
// node client, which must speak TLS too; it stops at start with the line that says what to set
// when rpccert is missing, when it cannot be read, when btcd speaks plain
// HTTP, or when rpccert is another btcd's certificate.
func TestBtcdWithTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(3*time.Minute))
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{TxIndex: true, TLS: true, WalletSeed: 81})
	if _, err := node.Generate(ctx, 105); err != nil {
		t.Fatal(err)
	}

	t.Run("rpccert", func(t *testing.T) {
		home := t.TempDir()
		raw, err := os.ReadFile(node.RPCCert())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, "btcd-rpc.cert"), raw, 0o600); err != nil {
			t.Fatal(err)
		}
		args := withoutFlag(withoutFlag(btcdArgs(node, "regtest", ""), "datadir"), "listen")
		p2pAddr := tcptest.FreeAddr(t)
		d := startDaemonEnv(t, []string{"HOME=" + home},
			append(args, "--datadir=$HOME/cfdata", "--rpccert=~/btcd-rpc.cert", "--listen="+p2pAddr)...)
		d.waitLog(60*time.Second, heightAtLeast(105))
		hash, err := node.BlockHash(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		if got := getdataBlock(t, p2pAddr, node.Params(), hash); got != hash {
			t.Fatalf("getdata block %s: got block %s", hash, got)
		}
		if code, _ := d.terminate(10 * time.Second); code != 0 {
			t.Fatalf("SIGTERM: exit %d", code)
		}
		if _, err := os.Stat(filepath.Join(home, "cfdata", "regtest", storeFileName)); err != nil {
			t.Fatalf("store not under the expanded datadir: %v", err)
		}
	})

	t.Run("no rpccert", func(t *testing.T) {
		d := startDaemon(t, btcdArgs(node, "regtest", t.TempDir())...)
		d.exitsWith(30*time.Second, "speaks TLS (btcd's default): set rpccert = <btcd datadir>/rpc.cert, or start btcd with --notls")
	})

	t.Run("another btcd's certificate", func(t *testing.T) {
		other := btcdtest.Start(t, btcdtest.Options{TLS: true})
		d := startDaemon(t, append(btcdArgs(node, "regtest", t.TempDir()), "--rpccert="+other.RPCCert())...)
		d.exitsWith(30*time.Second, "not the one in rpccert", other.RPCCert())
	})

	t.Run("rpccert unreadable", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "missing.cert")
		d := startDaemon(t, append(btcdArgs(node, "regtest", t.TempDir()), "--rpccert="+missing)...)
		d.exitsWith(30*time.Second, "rpccert not readable: "+missing, "point rpccert at it")
		dir := t.TempDir()
		d = startDaemon(t, append(btcdArgs(node, "regtest", t.TempDir()), "--rpccert="+dir)...)
		d.exitsWith(30*time.Second, "rpccert not readable: "+dir, "point rpccert at it")
	})

	t.Run("rpccert but btcd --notls", func(t *testing.T) {
		plain := btcdtest.Start(t, btcdtest.Options{TxIndex: true})
		d := startDaemon(t, append(btcdArgs(plain, "regtest", t.TempDir()), "--rpccert="+node.RPCCert())...)
		d.exitsWith(30*time.Second, "speaks plain HTTP, not TLS: remove rpccert")
	})
}

// TestStartRefusesWhatCannotHeal: credentials the node rejects or none
// for btcd, a forced prevout source the node cannot serve, a port another
// process holds, an rpcport that is the node's P2P port and a nodep2p that
// is not the node's P2P port each stop cfindexd at start, non-zero, with
// one line that says what to change — never a retry loop — and leave no
// store behind.
func TestStartRefusesWhatCannotHeal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(3*time.Minute))
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{TxIndex: true, WalletSeed: 83})
	if _, err := node.Generate(ctx, 3); err != nil {
		t.Fatal(err)
	}
	noIndex := btcdtest.Start(t, btcdtest.Options{})
	simnet := btcdtest.Start(t, btcdtest.Options{Net: "simnet"})
	unrelated := btcdtest.Start(t, btcdtest.Options{WalletSeed: 84}) // regtest too, another chain
	if _, err := unrelated.Generate(ctx, 2); err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	nowhere := tcptest.FreeAddr(t) // no node: the checks below must not need one
	nowhereHost, nowherePort, _ := net.SplitHostPort(nowhere)
	noNode := []string{"--chain=regtest", "--rpcconnect=" + nowhereHost, "--rpcport=" + nowherePort, "--rpcuser=u", "--rpcpassword=p", "--listen="}

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"wrong password", append(withoutFlag(btcdArgs(node, "regtest", t.TempDir()), "rpcpassword"), "--rpcpassword=wrong"),
			[]string{"HTTP 401: the node rejects rpcuser"}},
		{"prevoutsource rest on btcd", append(btcdArgs(node, "regtest", t.TempDir()), "--prevoutsource=rest"),
			[]string{"prevoutsource = rest, but btcd has no REST interface"}},
		{"prevoutsource getblock on btcd", append(btcdArgs(node, "regtest", t.TempDir()), "--prevoutsource=getblock"),
			[]string{"prevoutsource = getblock needs Bitcoin Core >= 23"}},
		{"prevoutsource txindex without --txindex", append(btcdArgs(noIndex, "regtest", t.TempDir()), "--prevoutsource=txindex"),
			[]string{"prevoutsource = txindex, but the node has no transaction index", "--txindex"}},
		{"http port taken", append(noNode, "--datadir="+t.TempDir(), "--httplisten="+taken.Addr().String()),
			[]string{"httplisten " + taken.Addr().String(), "address already in use"}},
		{"p2p port taken", append(withoutFlag(noNode, "listen"), "--datadir="+t.TempDir(), "--httplisten=", "--listen="+taken.Addr().String()),
			[]string{"listen " + taken.Addr().String(), "address already in use"}},
		// btcd's RPC server waits for the end of a request line and so
		// usually says nothing to a version message ("sent no version
		// message"); when the message's random nonce or its timestamp holds
		// a newline byte it answers 400 ("answered like an HTTP server (is
		// this the RPC port?)"). Either names the port as not the node's.
		{"nodep2p is the RPC port", append(withoutFlag(btcdArgs(node, "regtest", t.TempDir()), "nodep2p"), "--nodep2p="+node.RPCHost()),
			[]string{"nodep2p " + node.RPCHost(), "not the P2P port of the node cfindexd follows"}},
		{"nodep2p on another network", append(withoutFlag(btcdArgs(node, "regtest", t.TempDir()), "nodep2p"), "--nodep2p="+simnet.P2PAddr()),
			[]string{"nodep2p " + simnet.P2PAddr(), "it is a node on simnet, but cfindexd follows regtest"}},
		{"rpcport is the node's P2P port", append(withoutFlag(btcdArgs(node, "regtest", t.TempDir()), "rpcport"), "--rpcport="+port(node.P2PAddr())),
			[]string{node.P2PAddr() + " (rpcport) is a Bitcoin P2P port, not a JSON-RPC server"}},
		{"btcd without credentials", append(withoutFlag(withoutFlag(btcdArgs(node, "regtest", t.TempDir()), "rpcuser"), "rpcpassword"), "--bitcoindatadir="+t.TempDir()),
			[]string{"writes no cookie there: btcd writes none, set rpcuser and rpcpassword"}},
		{"nodep2p on another chain", append(withoutFlag(btcdArgs(node, "regtest", t.TempDir()), "nodep2p"), "--nodep2p="+unrelated.P2PAddr()),
			[]string{"nodep2p " + unrelated.P2PAddr(), "does not serve block 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := startDaemon(t, tc.args...)
			d.exitsWith(45*time.Second, tc.want...)
			// A failed start leaves no store behind.
			for _, a := range tc.args {
				if datadir, ok := strings.CutPrefix(a, "--datadir="); ok {
					if left, _ := os.ReadDir(datadir); len(left) > 0 {
						t.Errorf("the failed start left %s in the data directory", left[0].Name())
					}
				}
			}
		})
	}
}

// port is the port of a host:port address.
func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// getdataBlock connects to a P2P listener as a light client, asks for one
// block (getdata MSG_WITNESS_BLOCK) and returns the hash of the block it
// receives; notfound or nothing within the deadline fails t.
func getdataBlock(t *testing.T, addr string, params *chaincfg.Params, hash chainhash.Hash) chainhash.Hash {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(30*time.Second))
	defer cancel()
	p, err := p2pclient.Dial(ctx, addr, p2pclient.Options{Params: params, Services: wire.SFNodeWitness, Timeout: testtime.Scale(30 * time.Second)})
	if err != nil {
		t.Fatalf("p2p: %v", err)
	}
	defer p.Close()
	blocks, err := p.GetBlocks(ctx, []chainhash.Hash{hash}, true)
	if err != nil {
		t.Fatalf("getdata %s: %v", hash, err)
	}
	return blocks[0].Block.BlockHash()
}
