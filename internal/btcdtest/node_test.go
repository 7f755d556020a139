package btcdtest

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/testtime"
)

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(50*time.Second))
	t.Cleanup(cancel)
	return ctx
}

func TestBtcdVersionMatchesGoMod(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", btcdModule).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", btcdModule, err)
	}
	if got := strings.TrimSpace(string(out)); got != BtcdVersion {
		t.Fatalf("go.mod pins btcd %s, harness builds %s: update BtcdVersion", got, BtcdVersion)
	}
}

func TestStartStopLeavesNoProcess(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	n := Start(t, Options{})
	pid := n.PID()
	if pid == 0 {
		t.Fatal("PID() = 0 for a running node")
	}
	var count int64
	if err := n.Call(ctx, "getblockcount", nil, &count); err != nil {
		t.Fatalf("getblockcount: %v", err)
	}
	if count != 0 {
		t.Fatalf("fresh regtest height = %d, want 0", count)
	}
	conn, err := net.Dial("tcp", n.P2PAddr())
	if err != nil {
		t.Fatalf("dial btcd P2P %s: %v", n.P2PAddr(), err)
	}
	conn.Close()
	if err := n.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("kill(%d, 0) after Stop = %v, want ESRCH", pid, err)
	}
	if err := n.Call(ctx, "getblockcount", nil, &count); !errors.Is(err, ErrNodeStopped) {
		t.Fatalf("Call after Stop = %v, want ErrNodeStopped", err)
	}
	if err := n.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestCallReportsRPCErrors(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	n := Start(t, Options{})
	err := n.Call(ctx, "nosuchmethod", nil, nil)
	var rpcErr *RPCError
	if !errors.As(err, &rpcErr) {
		t.Fatalf("unknown method: err = %v, want *RPCError", err)
	}
	bad := newRPCClient(n.RPCHost(), n.User(), "wrong")
	if err := bad.call(ctx, "getblockcount", nil, nil); !errors.Is(err, ErrAuth) {
		t.Fatalf("wrong password: err = %v, want ErrAuth", err)
	}
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	n := Start(t, Options{})
	hashes, err := n.Generate(ctx, 5)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if len(hashes) != 5 {
		t.Fatalf("Generate returned %d hashes, want 5", len(hashes))
	}
	best, height, err := n.BestBlock(ctx)
	if err != nil {
		t.Fatalf("BestBlock: %v", err)
	}
	if height != 5 || best != hashes[4] {
		t.Fatalf("tip = %s@%d, want %s@5", best, height, hashes[4])
	}
	for i, want := range hashes {
		height := int32(i + 1)
		got, err := n.BlockHash(ctx, height)
		if err != nil {
			t.Fatalf("BlockHash(%d): %v", height, err)
		}
		if got != want {
			t.Fatalf("BlockHash(%d) = %s, want %s", height, got, want)
		}
		// btcd's own coinbases carry the BIP-34 height CoinbaseHeight reads.
		blk, err := n.Block(ctx, got)
		if err != nil {
			t.Fatal(err)
		}
		if h, err := CoinbaseHeight(n.Params(), blk); err != nil || h != height {
			t.Fatalf("CoinbaseHeight(block %d) = %d, %v", height, h, err)
		}
		if root := merkleRoot(blk.Transactions, false); root != blk.Header.MerkleRoot {
			t.Fatalf("merkleRoot(block %d) = %s, header has %s", height, root, blk.Header.MerkleRoot)
		}
	}
	// Every coinbase pays the node wallet's mining script.
	blk, err := n.Block(ctx, hashes[0])
	if err != nil {
		t.Fatalf("Block: %v", err)
	}
	if got := blk.Transactions[0].TxOut[0].PkScript; string(got) != string(n.Wallet().MiningScript()) {
		t.Fatalf("coinbase pays %x, want mining script %x", got, n.Wallet().MiningScript())
	}
}

// TestStartNodeWithoutTB drives a simnet node through the testing-free API
// cmd/cfbench uses: StartNode, Stop, RunOnce with --dropcfindex (btcd drops
// its filter index and exits), Launch again with the chain intact.
func TestStartNodeWithoutTB(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	n, err := StartNode(Options{Net: "simnet", DataDir: t.TempDir()})
	if err != nil {
		t.Fatalf("StartNode: %v", err)
	}
	t.Cleanup(func() { _ = n.Stop() })
	if _, err := n.Generate(ctx, 3); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if err := n.RunOnce(ctx, "--dropcfindex"); !errors.Is(err, ErrNodeRunning) {
		t.Fatalf("RunOnce on a running node = %v, want ErrNodeRunning", err)
	}
	if err := n.Launch(); !errors.Is(err, ErrNodeRunning) {
		t.Fatalf("Launch on a running node = %v, want ErrNodeRunning", err)
	}
	if err := n.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := n.RunOnce(ctx, "--dropcfindex"); err != nil {
		t.Fatalf("RunOnce --dropcfindex: %v", err)
	}
	log, err := os.ReadFile(n.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "Dropping all committed filter index entries") {
		t.Fatalf("btcd log does not show the filter index being dropped:\n%s", log)
	}
	if err := n.Launch(); err != nil {
		t.Fatalf("Launch after Stop: %v", err)
	}
	if _, height, err := n.BestBlock(ctx); err != nil || height != 3 {
		t.Fatalf("BestBlock after relaunch = %d, %v; want 3 (simnet keeps its chain)", height, err)
	}
	if err := n.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}
