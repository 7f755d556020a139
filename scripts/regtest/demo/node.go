package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/nodeclient"
)

// Node kinds for -node.
const (
	nodeAuto     = "auto"
	nodeBtcd     = "btcd"
	nodeBitcoind = "bitcoind"
)

// walletSeed fixes the demo wallet's keys, so every run pays the same
// scripts.
const walletSeed = 2026

// regtestNode is the node behind cfindexd. Everything the demo asks of it
// goes through Client (the same RPC client cfindexd uses), except mining,
// which differs: btcd has `generate`, Core `generatetoaddress`.
type regtestNode interface {
	// Kind is nodeBtcd or nodeBitcoind.
	Kind() string
	// Client is an RPC client of the node.
	Client() *nodeclient.Client
	// Wallet is the key wallet whose mining script every coinbase pays.
	Wallet() *btcdtest.Wallet
	// Mine mines count blocks and returns their hashes in height order.
	Mine(ctx context.Context, count int) ([]chainhash.Hash, error)
	// DaemonArgs are the cfindexd flags that reach the node's RPC.
	DaemonArgs() []string
	// Describe says how to reach the node's RPC, for the -keep report.
	Describe() string
	// P2PAddr is where the node listens for P2P peers, on loopback.
	P2PAddr() string
	// MineCommand is a shell command that mines one block on the node,
	// for the -keep report.
	MineCommand() string
	// Stop stops the node and waits for it to exit.
	Stop() error
}

// resolveNodeKind turns -node into nodeBtcd or nodeBitcoind.
func resolveNodeKind(kind string) (string, error) {
	switch kind {
	case nodeAuto:
		if _, err := exec.LookPath("bitcoind"); err == nil {
			return nodeBitcoind, nil
		}
		return nodeBtcd, nil
	case nodeBtcd, nodeBitcoind:
		return kind, nil
	default:
		return "", fmt.Errorf("-node %q: want auto, btcd or bitcoind", kind)
	}
}

// startNode starts a node of kind with its data below stateDir.
func startNode(ctx context.Context, kind, stateDir string) (regtestNode, error) {
	if kind == nodeBitcoind {
		return startBitcoind(ctx, stateDir)
	}
	return startBtcd(stateDir)
}

// btcdNode is btcd v0.26.2 built from the module pinned in go.mod and run
// by internal/btcdtest with --txindex.
type btcdNode struct {
	node   *btcdtest.Node
	client *nodeclient.Client
}

func startBtcd(stateDir string) (*btcdNode, error) {
	bin, err := btcdtest.BuildBinary()
	if err != nil {
		return nil, fmt.Errorf("build btcd: %w", err)
	}
	dataDir := filepath.Join(stateDir, "btcd")
	if err := mkdir(dataDir); err != nil {
		return nil, err
	}
	node, err := btcdtest.StartNode(btcdtest.Options{
		DataDir:    dataDir,
		TxIndex:    true,
		WalletSeed: walletSeed,
	})
	if err != nil {
		return nil, err
	}
	n := &btcdNode{node: node}
	if exe, err := filepath.EvalSymlinks(bin); err == nil {
		err = writePIDFile(stateDir, "btcd", node.PID(), exe)
		if err != nil {
			_ = node.Stop()
			return nil, err
		}
	}
	n.client, err = nodeclient.NewClient(nodeclient.Config{Host: node.RPCHost(), User: node.User(), Password: node.Password()}, zerolog.Nop())
	if err != nil {
		_ = n.Stop()
		return nil, fmt.Errorf("btcd client: %w", err)
	}
	return n, nil
}

func (n *btcdNode) Kind() string               { return nodeBtcd }
func (n *btcdNode) Client() *nodeclient.Client { return n.client }
func (n *btcdNode) Wallet() *btcdtest.Wallet   { return n.node.Wallet() }
func (n *btcdNode) Describe() string {
	return fmt.Sprintf("btcd RPC %s (user %s, password %s), log %s", n.node.RPCHost(), n.node.User(), n.node.Password(), n.node.LogPath())
}

func (n *btcdNode) P2PAddr() string { return n.node.P2PAddr() }

// MineCommand is btcd's generate over JSON-RPC with curl: btcd has no
// bitcoin-cli, and btcctl is not built by the demo.
func (n *btcdNode) MineCommand() string {
	return fmt.Sprintf(`curl -s --user %s:%s -H 'Content-Type: application/json' --data-binary '{"jsonrpc":"1.0","id":1,"method":"generate","params":[1]}' http://%s/`,
		n.node.User(), n.node.Password(), n.node.RPCHost())
}

func (n *btcdNode) Mine(ctx context.Context, count int) ([]chainhash.Hash, error) {
	return n.node.Generate(ctx, count)
}

func (n *btcdNode) DaemonArgs() []string {
	host, port, _ := net.SplitHostPort(n.node.RPCHost())
	return []string{
		"--rpcconnect=" + host, "--rpcport=" + port,
		"--rpcuser=" + n.node.User(), "--rpcpassword=" + n.node.Password(),
		// btcd listens on a free port, not regtest's default: name it,
		// so blocks come over its P2P port (nodep2p=auto would look at
		// 18444 and fall back to JSON-RPC).
		"--nodep2p=" + n.node.P2PAddr(),
	}
}

func (n *btcdNode) Stop() error {
	if n.client != nil {
		n.client.Close()
	}
	err := n.node.Stop()
	stateDir := filepath.Dir(n.node.DataDir())
	removePIDFile(stateDir, "btcd")
	if err != nil {
		return fmt.Errorf("stop btcd: %w", err)
	}
	return nil
}

// freeLoopbackPort returns a port on 127.0.0.1 that nothing listens on.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// mkdir creates dir for the demo's own use.
func mkdir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return nil
}
