package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/corefixture"
	"github.com/cfindexd/cfindexd/internal/tcptest"
	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/store"
)

// nodeArgs are the flags that point cfindexd at a btcdtest node, raw
// blocks fetched over the node's P2P port as a btcd user gets by default.
func nodeArgs(n *btcdtest.Node, chain, datadir string) []string {
	host, port, _ := net.SplitHostPort(n.RPCHost())
	return []string{
		"--chain=" + chain, "--datadir=" + datadir,
		"--rpcconnect=" + host, "--rpcport=" + port,
		"--rpcuser=" + n.User(), "--rpcpassword=" + n.Password(),
		"--nodep2p=" + n.P2PAddr(),
		"--httplisten=", "--listen=",
	}
}

// withoutFlag returns args without the flags named name.
func withoutFlag(args []string, name string) []string {
	return slices.DeleteFunc(slices.Clone(args), func(a string) bool { return strings.HasPrefix(a, "--"+name+"=") })
}

// openStoreAfterExit opens the store a stopped daemon left behind.
func openStoreAfterExit(t *testing.T, datadir, chain string, params *chaincfg.Params) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(datadir, chain, storeFileName), *params.GenesisHash, store.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestCrashSafetyKill9 kills a real cfindexd process with SIGKILL at 12
// moments during catch-up, each after a random (fixed seed) number of
// committed blocks. Every restart must resume at or
// above the height the previous run reached, and the final store must equal
// btcd's index with no gap.
func TestCrashSafetyKill9(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(8*time.Minute))
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{TxIndex: true, WalletSeed: 21})
	if err := btcdtest.BuildTxRichChain(ctx, node, node.Wallet(), 1200); err != nil {
		t.Fatal(err)
	}
	_, bestHeight, err := node.BestBlock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	datadir := t.TempDir()
	// One worker and one-block batches make catch-up slow enough (every
	// commit is fsynced) to be killed in the middle many times.
	args := append(nodeArgs(node, "regtest", datadir), "--workers=1", "--batchblocks=1")
	rng := rand.New(rand.NewPCG(42, 42))

	resumedFrom := -1.0
	kills := 0
	for kills < 12 {
		d := startDaemon(t, args...)
		start := d.waitLog(30*time.Second, msgIs("starting"))
		from := start["store_height"].(float64)
		if start["store_empty"] == true {
			from = -1
		}
		if from < resumedFrom {
			t.Fatalf("restart %d: store at height %.0f, but the previous run had reached %.0f", kills, from, resumedFrom)
		}
		if from >= float64(bestHeight) {
			t.Fatalf("catch-up finished after %d kills; need a longer chain or slower catch-up", kills)
		}
		// Let it commit a random number of blocks (5..80) past where it
		// resumed, then kill it: the kill lands somewhere in the work on
		// the next batch, whatever the machine's speed.
		target := max(from, 0) + float64(5+rng.IntN(76))
		d.waitLog(30*time.Second, func(m map[string]any) bool {
			h, ok := m["height"].(float64)
			return ok && m["message"] == "committed" && h >= target
		})
		d.kill9()
		kills++
		// The store must open cleanly after every kill.
		st := openStoreAfterExit(t, datadir, "regtest", node.Params())
		tip, ok := st.Tip()
		if ok {
			resumedFrom = float64(tip.Height)
			if err := checkNoGap(st, tip.Height); err != nil {
				t.Fatalf("after kill %d: %v", kills, err)
			}
		}
		st.Close()
		t.Logf("kill %d: store tip %.0f of %d", kills, resumedFrom, bestHeight)
	}

	d := startDaemon(t, args...)
	d.waitLog(2*time.Minute, heightAtLeast(float64(bestHeight)))
	code, took := d.terminate(10 * time.Second)
	if code != 0 {
		t.Fatalf("SIGTERM: exit %d, want 0", code)
	}
	t.Logf("SIGTERM to exit: %s", took.Round(time.Millisecond))
	st := openStoreAfterExit(t, datadir, "regtest", node.Params())
	if err := node.CompareStore(ctx, st, 0); err != nil {
		t.Fatal(err)
	}
}

// checkNoGap asserts every height up to tip has a filter whose header chain
// links.
func checkNoGap(st *store.Store, tip uint32) error {
	for start := uint32(0); start <= tip; start += store.MaxRange {
		end := min(tip, start+store.MaxRange-1)
		recs, err := st.FiltersByHeight(start, end)
		if err != nil {
			return fmt.Errorf("filters %d..%d: %w", start, end, err)
		}
		if len(recs) != int(end-start+1) {
			return fmt.Errorf("filters %d..%d: got %d", start, end, len(recs))
		}
	}
	return nil
}

// TestNodeUnreachableAtStartAndRestart starts cfindexd before its node, then
// restarts the node (simnet keeps its chain) while cfindexd runs: cfindexd
// waits, logs, and catches up each time without being restarted.
func TestNodeUnreachableAtStartAndRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(5*time.Minute))
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{Net: "simnet", TxIndex: true, WalletSeed: 31})
	if _, err := node.Generate(ctx, 120); err != nil {
		t.Fatal(err)
	}
	if err := node.Stop(); err != nil {
		t.Fatal(err)
	}
	datadir := t.TempDir()
	httpAddr := tcptest.FreeAddr(t)
	// Blocks come over the node's P2P port (nodep2p names it), which is
	// down with the node at first; TestNodeP2PAutoChecksThePeer covers
	// nodep2p = auto.
	args := nodeArgs(node, "simnet", datadir)
	d := startDaemon(t, append(args, "--pollinterval=200ms", "--httplisten="+httpAddr)...)
	d.waitLog(20*time.Second, msgIs("waiting for the node"))
	waitHTTP(t, "http://"+httpAddr+"/healthz", 200, "ok")

	node.Restart(t)
	d.waitLog(60*time.Second, func(m map[string]any) bool {
		return m["message"] == "fetching blocks over the node's P2P port" && m["nodep2p"] == node.P2PAddr()
	})
	d.waitLog(60*time.Second, heightAtLeast(120))
	waitHTTP(t, "http://"+httpAddr+"/readyz", 200, "")
	waitHTTP(t, "http://"+httpAddr+"/metrics", 200, "cfindexd_indexed_height 120")

	if err := node.Stop(); err != nil {
		t.Fatal(err)
	}
	d.waitLog(20*time.Second, func(m map[string]any) bool {
		return m["message"] == "sync round failed; retrying" || m["message"] == "node stopped answering; serving what the store holds until it is back"
	})
	node.Restart(t)
	hashes, err := node.Generate(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	d.waitLog(60*time.Second, func(m map[string]any) bool {
		return m["message"] == "indexed block" && m["hash"] == hashes[len(hashes)-1].String()
	})
	if code, _ := d.terminate(10 * time.Second); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
	st := openStoreAfterExit(t, datadir, "simnet", node.Params())
	if err := node.CompareStore(ctx, st, 0); err != nil {
		t.Fatal(err)
	}
}

// TestMismatchedNetworkExitsNonZero runs cfindexd configured for one network
// against a node of another, and against a store of another: each exits
// non-zero and says why in its last line.
func TestMismatchedNetworkExitsNonZero(t *testing.T) {
	node := btcdtest.Start(t, btcdtest.Options{TxIndex: true, WalletSeed: 41}) // regtest

	t.Run("node on another network", func(t *testing.T) {
		d := startDaemon(t, nodeArgs(node, "simnet", t.TempDir())...)
		code, last := d.wait(30 * time.Second)
		if code == 0 || !strings.Contains(last, "is on regtest, but cfindexd follows simnet") || strings.Count(last, "\n") > 0 {
			t.Fatalf("exit %d, last line %q", code, last)
		}
	})

	t.Run("store of another network", func(t *testing.T) {
		datadir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(datadir, "regtest"), 0o700); err != nil {
			t.Fatal(err)
		}
		st, err := store.Open(filepath.Join(datadir, "regtest", storeFileName), *chaincfg.SimNetParams.GenesisHash, store.Options{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		st.Close()
		d := startDaemon(t, nodeArgs(node, "regtest", datadir)...)
		code, last := d.wait(30 * time.Second)
		if code == 0 || !strings.Contains(last, "open store") || !strings.Contains(last, "network") {
			t.Fatalf("exit %d, last line %q", code, last)
		}
	})

	t.Run("store locked by another process", func(t *testing.T) {
		datadir := t.TempDir()
		args := nodeArgs(node, "regtest", datadir)
		first := startDaemon(t, args...)
		first.waitLog(30*time.Second, msgIs("starting"))
		second := startDaemon(t, args...)
		code, last := second.wait(30 * time.Second)
		if code == 0 || strings.Count(last, "open store") != 1 || !strings.Contains(last, "locked by another process") {
			t.Fatalf("exit %d, last line %q", code, last)
		}
		if code, _ := first.terminate(10 * time.Second); code != 0 {
			t.Fatalf("first daemon: exit %d", code)
		}
	})
}

// waitHTTP polls url until it answers status with a body containing want.
func waitHTTP(t *testing.T, url string, status int, want string) {
	t.Helper()
	deadline := time.Now().Add(testtime.Scale(15 * time.Second))
	for {
		resp, err := http.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == status && strings.Contains(string(body), want) {
				return
			}
			err = fmt.Errorf("status %d, body %.300q", resp.StatusCode, body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestZMQWakesDaemon runs cfindexd with polling effectively off (once an
// hour) and zmqpubhashblock pointing at a publisher that speaks Core's
// 3-frame format: each block btcd mines is announced and must be indexed
// within 2 s, including after a deliberately skipped sequence number.
func TestZMQWakesDaemon(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(3*time.Minute))
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{TxIndex: true, WalletSeed: 51})
	if _, err := node.Generate(ctx, 110); err != nil {
		t.Fatal(err)
	}
	pub := corefixture.NewPublisher(t)
	d := startDaemon(t, append(nodeArgs(node, "regtest", t.TempDir()), "--pollinterval=1h", "--zmqpubhashblock="+pub.Endpoint())...)
	d.waitLog(30*time.Second, heightAtLeast(110))
	if err := pub.WaitSubscribed(ctx, "hashblock", 1); err != nil {
		t.Fatal(err)
	}
	seq := uint32(500)
	for i := range 6 {
		hashes, err := node.Generate(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		seq++
		if i == 3 {
			seq++ // a lost message: the subscriber must resync, not stall
		}
		body := hashes[0].CloneBytes()
		slices.Reverse(body) // Core publishes the hash in display order
		frameSeq := binary.LittleEndian.AppendUint32(nil, seq)
		began := time.Now()
		if _, err := pub.Publish([]byte("hashblock"), body, frameSeq); err != nil {
			t.Fatal(err)
		}
		d.waitLog(2*time.Second, func(m map[string]any) bool {
			return m["message"] == "indexed block" && m["hash"] == hashes[0].String()
		})
		t.Logf("block %d indexed %s after its hashblock", i, time.Since(began).Round(time.Millisecond))
	}
	if code, _ := d.terminate(10 * time.Second); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
}
