package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/nodeclient"
)

const (
	// bitcoindStartTimeout bounds the wait for bitcoind's RPC.
	bitcoindStartTimeout = 60 * time.Second
	// bitcoindStopGrace is how long bitcoind may take to flush and exit
	// after SIGTERM.
	bitcoindStopGrace = 60 * time.Second
)

// bitcoindNode is Bitcoin Core found on PATH, run as
//
//	bitcoind -regtest -datadir=<state>/bitcoind -server=1 -rest=1 -txindex=1
//	  -disablewallet=1 -listen=1 -bind=127.0.0.1:<free> -listenonion=0 -discover=0
//	  -rpcbind=127.0.0.1 -rpcallowip=127.0.0.1 -rpcport=<free>
//
// with cookie authentication (<datadir>/regtest/.cookie). Core's own wallet
// is not used (it may not be compiled in): the demo's key wallet
// (btcdtest.Wallet) owns the coinbases, which generatetoaddress pays to its
// P2PKH mining address, and signs the transactions.
//
// This branch runs only where bitcoind is installed; the repository's CI
// has only Go, so it is not exercised there. With -rest=1, cfindexd uses
// Core's REST spenttxouts (Core >= 30) or getblock verbosity 3 (>= 23).
type bitcoindNode struct {
	proc    *child
	client  *nodeclient.Client
	wallet  *btcdtest.Wallet
	rpcPort int
	rpcAddr string
	p2pAddr string
	dataDir string
	cookie  string
}

func startBitcoind(ctx context.Context, stateDir string) (*bitcoindNode, error) {
	bin, err := exec.LookPath("bitcoind")
	if err != nil {
		return nil, fmt.Errorf("bitcoind not on PATH: %w", err)
	}
	dataDir := filepath.Join(stateDir, "bitcoind")
	if err := mkdir(dataDir); err != nil {
		return nil, err
	}
	port, err := freeLoopbackPort()
	if err != nil {
		return nil, fmt.Errorf("bitcoind rpc port: %w", err)
	}
	p2pPort, err := freeLoopbackPort()
	if err != nil {
		return nil, fmt.Errorf("bitcoind p2p port: %w", err)
	}
	p2pAddr := "127.0.0.1:" + strconv.Itoa(p2pPort)
	proc, err := startChild(stateDir, "bitcoind", bin, nil,
		"-regtest", "-datadir="+dataDir, "-server=1", "-rest=1", "-txindex=1",
		"-disablewallet=1", "-listen=1", "-bind="+p2pAddr, "-listenonion=0", "-discover=0", "-dnsseed=0",
		"-rpcbind=127.0.0.1", "-rpcallowip=127.0.0.1", "-rpcport="+strconv.Itoa(port))
	if err != nil {
		return nil, err
	}
	n := &bitcoindNode{
		proc:    proc,
		wallet:  btcdtest.NewWallet(&chaincfg.RegressionNetParams, walletSeed),
		rpcPort: port,
		rpcAddr: "127.0.0.1:" + strconv.Itoa(port),
		p2pAddr: p2pAddr,
		dataDir: dataDir,
		cookie:  filepath.Join(dataDir, "regtest", ".cookie"),
	}
	n.client, err = nodeclient.NewClient(nodeclient.Config{Host: n.rpcAddr, CookieFile: n.cookie}, zerolog.Nop())
	if err != nil {
		_ = n.Stop()
		return nil, fmt.Errorf("bitcoind client: %w", err)
	}
	if err := n.waitRPC(ctx); err != nil {
		_ = n.Stop()
		return nil, err
	}
	return n, nil
}

// waitRPC waits until bitcoind answers getblockchaininfo on regtest. Until
// then the cookie may not exist yet and the RPC may be warming up.
func (n *bitcoindNode) waitRPC(ctx context.Context) error {
	deadline := time.Now().Add(bitcoindStartTimeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		info, err := n.client.GetChainInfo(ctx)
		if err == nil {
			if info.Chain != "regtest" {
				return fmt.Errorf("bitcoind runs %q, not regtest", info.Chain)
			}
			return nil
		}
		if gone, why := n.proc.exited(); gone {
			return why
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bitcoind did not answer RPC within %v: %w (see %s)", bitcoindStartTimeout, err, n.proc.logPath)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func (n *bitcoindNode) Kind() string               { return nodeBitcoind }
func (n *bitcoindNode) Client() *nodeclient.Client { return n.client }
func (n *bitcoindNode) Wallet() *btcdtest.Wallet   { return n.wallet }
func (n *bitcoindNode) Describe() string {
	return fmt.Sprintf("bitcoind RPC and REST %s (cookie %s), log %s", n.rpcAddr, n.cookie, n.proc.logPath)
}

func (n *bitcoindNode) P2PAddr() string { return n.p2pAddr }

// MineCommand is bitcoin-cli's generatetoaddress to the demo wallet's
// mining address, with the node's cookie from its datadir.
func (n *bitcoindNode) MineCommand() string {
	return fmt.Sprintf("bitcoin-cli -regtest -datadir=%s -rpcport=%d generatetoaddress 1 %s", n.dataDir, n.rpcPort, n.wallet.MiningAddress())
}

func (n *bitcoindNode) Mine(ctx context.Context, count int) ([]chainhash.Hash, error) {
	var hexes []string
	if err := n.client.Call(ctx, "generatetoaddress", []any{count, n.wallet.MiningAddress()}, &hexes); err != nil {
		return nil, fmt.Errorf("generatetoaddress: %w", err)
	}
	hashes := make([]chainhash.Hash, len(hexes))
	for i, h := range hexes {
		hash, err := chainhash.NewHashFromStr(h)
		if err != nil {
			return nil, fmt.Errorf("generatetoaddress: %w", err)
		}
		hashes[i] = *hash
	}
	return hashes, nil
}

func (n *bitcoindNode) DaemonArgs() []string {
	return []string{
		"--rpcconnect=127.0.0.1", "--rpcport=" + strconv.Itoa(n.rpcPort),
		"--rpccookiefile=" + n.cookie,
	}
}

func (n *bitcoindNode) Stop() error {
	if n.client != nil {
		n.client.Close()
	}
	return n.proc.stop(bitcoindStopGrace)
}
