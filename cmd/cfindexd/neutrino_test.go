package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcutil/v2"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/rpcclient"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/btcsuite/btclog"
	"github.com/lightninglabs/neutrino"
	"github.com/lightninglabs/neutrino/headerfs"
	"golang.org/x/sync/errgroup"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/lightclient"
	"github.com/cfindexd/cfindexd/internal/tcptest"
)

const (
	// e2eEmptyBlocks are mined with btcd's generate first; with the rest
	// the chain passes two getcfcheckpt intervals.
	e2eEmptyBlocks = 2080
	// e2eRichBlocks follow, each with transactions of every script kind.
	e2eRichBlocks = 400
	// e2eTailBlocks follow the block holding the watched transaction.
	e2eTailBlocks = 19
	// e2eChainHeight is the tip before neutrino starts.
	e2eChainHeight = e2eEmptyBlocks + e2eRichBlocks + 1 + e2eTailBlocks
	// e2eRescanFrom is where the rescan starts: before every tx-rich block.
	e2eRescanFrom = 1000
	// e2eWait bounds every wait on cfindexd or neutrino.
	e2eWait = 60 * time.Second
	// lessWorkDrop is neutrino's warning when a peer offers a branch with
	// less work than the one neutrino has; it then disconnects the peer.
	// cfindexd once caused it by committing a new branch block by block
	// during a reorg; the indexer now switches branches in one store
	// transaction once the new branch is the longer one, so it must never
	// appear.
	lessWorkDrop = "Reorg attempt that has less work than known chain"
)

// TestNeutrinoSyncsFromDaemon is issue 4's first must-show through the real
// daemon: neutrino v0.18.0 whose only peer is a cfindexd process (btcd with
// --txindex behind it, all on loopback) syncs the headers, filter headers
// and filters of a 2,500-block regtest chain (so getcfcheckpt runs); every
// filter equals btcd's getcfilter; GetBlock works; a rescan finds a
// transaction to a watched address in its block; a transaction neutrino
// broadcasts reaches btcd; blocks mined later reach neutrino, and so does a
// reorg (without neutrino ever seeing a tip with less work); neutrino never
// bans cfindexd and never disconnects it.
func TestNeutrinoSyncsFromDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("starts btcd, cfindexd and neutrino")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	began := time.Now()
	node := btcdtest.Start(t, btcdtest.Options{TxIndex: true, WalletSeed: 61})
	watched, txHash, txHeight := buildE2EChain(ctx, t, node)
	t.Logf("btcd chain of %d blocks (watched tx %s at %d) in %v", e2eChainHeight, txHash, txHeight, time.Since(began).Round(time.Millisecond))

	p2pAddr, httpAddr := tcptest.FreeAddr(t), tcptest.FreeAddr(t)
	d := startDaemon(t, append(nodeArgs(node, "regtest", t.TempDir()),
		"--listen="+p2pAddr, "--httplisten="+httpAddr, "--relaytx=true", "--pollinterval=100ms", "--reorgsettle=10m")...)
	d.waitLog(e2eWait, heightAtLeast(e2eChainHeight))
	t.Logf("cfindexd indexed to %d at %v", e2eChainHeight, time.Since(began).Round(time.Millisecond))

	cs, nlog := startNeutrino(t, node.Params(), p2pAddr)
	start := time.Now()
	tip, _ := mustBest(ctx, t, node)
	waitNeutrinoTip(t, cs, node, tip)
	t.Logf("neutrino synced %d headers and filter headers in %v", e2eChainHeight, time.Since(start).Round(time.Millisecond))

	// First the rescan, so that the filters it matches and the block it
	// downloads come from cfindexd, not from neutrino's caches: it must
	// find the watched transaction in its block and nowhere else.
	start = time.Now()
	found := rescanFor(t, cs, watched, e2eRescanFrom, e2eChainHeight)
	if len(found) != 1 || found[0].height != txHeight || found[0].txid != txHash {
		t.Fatalf("rescan found %+v, want tx %s at height %d only", found, txHash, txHeight)
	}
	t.Logf("rescan of %d blocks found %s at %d in %v", e2eChainHeight-e2eRescanFrom, txHash, txHeight, time.Since(start).Round(time.Millisecond))

	start = time.Now()
	compareFilters(ctx, t, cs, node, e2eChainHeight)
	t.Logf("%d filters from neutrino equal btcd's, compared in %v", e2eChainHeight+1, time.Since(start).Round(time.Millisecond))

	for _, h := range []int32{1, txHeight, e2eChainHeight} {
		hash, err := node.BlockHash(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		blk, err := cs.GetBlock(hash)
		if err != nil {
			t.Fatalf("neutrino GetBlock at %d: %v", h, err)
		}
		if *blk.Hash() != hash {
			t.Fatalf("GetBlock at %d returned %s, want %s", h, blk.Hash(), hash)
		}
		if h == txHeight && !blockHasTx(blk, txHash) {
			t.Fatalf("block %d from GetBlock lacks tx %s", h, txHash)
		}
	}

	// A transaction neutrino broadcasts reaches btcd's mempool through
	// cfindexd (--relaytx).
	relayed, err := node.Wallet().Fund([]*wire.TxOut{wire.NewTxOut(50_000, node.Wallet().MiningScript())}, btcdtest.DefaultFeeRate)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.SendTransaction(relayed); err != nil {
		t.Fatalf("neutrino SendTransaction: %v", err)
	}
	if !pollUntil(e2eWait, func() bool {
		var pool []string
		return node.Call(ctx, "getrawmempool", nil, &pool) == nil && len(pool) == 1 && pool[0] == relayed.TxHash().String()
	}) {
		t.Fatalf("tx %s neutrino sent is not in btcd's mempool within %v", relayed.TxHash(), e2eWait)
	}

	// New blocks reach neutrino.
	if _, err := node.Generate(ctx, 3); err != nil {
		t.Fatal(err)
	}
	tip, height := mustBest(ctx, t, node)
	waitNeutrinoTip(t, cs, node, tip)
	compareFilterAt(ctx, t, cs, node, tip, height)
	// Up to here neutrino kept its one connection and warned about nothing.
	if w := nlog.Warnings(); len(w) > 0 {
		t.Fatalf("neutrino warned:\n%s", strings.Join(w, "\n"))
	}
	if c, dc := d.countLogs(msgIs("peer connected")), d.countLogs(msgIs("peer disconnected")); c != 1 || dc != 0 {
		t.Fatalf("cfindexd saw %d connections and %d disconnections, want 1 and 0", c, dc)
	}

	// A reorg reaches neutrino: drop the top three blocks on btcd, then
	// mine the replacement branch one block at a time. The daemon polls
	// the node (every 100 ms) in each intermediate state — three blocks
	// disconnected and none connected, then a shorter branch, then one as
	// long (equal work) — and must keep serving the indexed chain through
	// all of them (the settle time is raised so a slow machine cannot
	// outlast it), switching only once the new branch has more work:
	// neutrino must never see a tip with less work.
	polledAt := func(h int32) {
		t.Helper()
		if !pollUntil(e2eWait, func() bool { return scrape(t, "http://"+httpAddr)["cfindexd_node_height"] == float64(h) }) {
			t.Fatalf("the daemon did not poll the node at height %d within %v", h, e2eWait)
		}
	}
	old, err := node.BlockHash(ctx, height-2)
	if err != nil {
		t.Fatal(err)
	}
	indexedTip := tip
	if err := node.InvalidateBlock(ctx, old); err != nil {
		t.Fatal(err)
	}
	polledAt(height - 3)
	d.waitLog(e2eWait, func(m map[string]any) bool {
		msg, _ := m["message"].(string)
		return strings.HasPrefix(msg, "the node's chain has no more work than the indexed one")
	})
	for i := int32(1); i <= 5; i++ {
		if i <= 4 {
			// i-1 replacement blocks: no more work than the indexed
			// chain's three (equal at three), so nothing moves.
			if st, _, b := get(t, fmt.Sprintf("http://%s/rest/blockhashbyheight/%d.hex", httpAddr, height), nil); st != 200 || strings.TrimSpace(string(b)) != indexedTip.String() {
				t.Fatalf("%d blocks into the replacement branch, the daemon serves %d %q at %d, want the indexed tip %s", i-1, st, b, height, indexedTip)
			}
		}
		if _, err := node.Generate(ctx, 1); err != nil {
			t.Fatal(err)
		}
		polledAt(height - 3 + i)
	}
	tip, height = mustBest(ctx, t, node)
	d.waitLog(e2eWait, func(m map[string]any) bool {
		msg, _ := m["message"].(string)
		return strings.HasPrefix(msg, "reorg: switched to the node's branch")
	})
	if n := d.countLogs(func(m map[string]any) bool {
		msg, _ := m["message"].(string)
		return strings.HasPrefix(msg, "reorg: rolled back") || strings.Contains(msg, "which has less work")
	}); n != 0 {
		t.Fatalf("the daemon followed a chain with less work %d times", n)
	}
	start = time.Now()
	waitNeutrinoTip(t, cs, node, tip)
	t.Logf("neutrino followed a 3-block reorg to %d in %v", height, time.Since(start).Round(time.Millisecond))
	for h := height - 5; h <= height; h++ {
		hash, err := node.BlockHash(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		compareFilterAt(ctx, t, cs, node, hash, h)
	}

	// cfindexd was never banned, never dropped, and is neutrino's peer at
	// the end.
	if cs.IsBanned(p2pAddr) {
		t.Fatal("neutrino banned cfindexd")
	}
	if n := cs.ConnectedCount(); n != 1 {
		t.Fatalf("neutrino has %d peers, want 1 (cfindexd)", n)
	}
	for _, w := range nlog.Warnings() {
		if strings.Contains(w, lessWorkDrop) {
			t.Errorf("neutrino was shown a tip with less work during the reorg: %s", w)
			continue
		}
		t.Errorf("neutrino warned: %s", w)
	}
	c, dc := d.countLogs(msgIs("peer connected")), d.countLogs(msgIs("peer disconnected"))
	if c != 1 || dc != 0 {
		t.Fatalf("cfindexd saw %d connections and %d disconnections, want 1 and 0", c, dc)
	}
	metrics := getMetrics(t, "http://"+httpAddr+"/metrics")
	for _, want := range []string{
		`cfindexd_p2p_peers_connected 1`,
		`cfindexd_p2p_messages_received_total{command="getcfcheckpt"}`,
		`cfindexd_p2p_messages_received_total{command="getcfheaders"}`,
		`cfindexd_p2p_messages_received_total{command="getcfilters"}`,
		`cfindexd_p2p_messages_received_total{command="getdata"}`,
		`cfindexd_p2p_messages_received_total{command="tx"}`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// Every disconnect cause is exported from the start; all must be 0.
	for l := range strings.Lines(grepLines(metrics, "cfindexd_p2p_disconnects_total{")) {
		if !strings.HasSuffix(strings.TrimSpace(l), " 0") {
			t.Errorf("cfindexd dropped a peer:\n%s", grepLines(metrics, "cfindexd_p2p_disconnects_total"))
			break
		}
	}
	t.Logf("whole test %v", time.Since(began).Round(time.Millisecond))
}

// buildE2EChain mines the test chain on node and returns the watched
// address, the txid paying it and the height of its block.
func buildE2EChain(ctx context.Context, t *testing.T, node *btcdtest.Node) (address.Address, chainhash.Hash, int32) {
	t.Helper()
	for mined := 0; mined < e2eEmptyBlocks; {
		n := min(490, e2eEmptyBlocks-mined)
		if _, err := node.Generate(ctx, n); err != nil {
			t.Fatalf("generate: %v", err)
		}
		mined += n
	}
	wallet := node.Wallet()
	if err := btcdtest.BuildTxRichChain(ctx, node, wallet, e2eRichBlocks); err != nil {
		t.Fatal(err)
	}
	if err := wallet.Sync(ctx, node); err != nil {
		t.Fatal(err)
	}
	script, err := wallet.NewScript(btcdtest.KindP2WPKH)
	if err != nil {
		t.Fatal(err)
	}
	watched, err := address.NewAddressWitnessPubKeyHash(script[2:], node.Params())
	if err != nil {
		t.Fatal(err)
	}
	tx, err := wallet.Send(ctx, node, []*wire.TxOut{wire.NewTxOut(1_234_567, script)})
	if err != nil {
		t.Fatal(err)
	}
	hashes, err := node.Generate(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := node.Block(ctx, hashes[0])
	if err != nil {
		t.Fatal(err)
	}
	if !blockHasTx(btcutil.NewBlock(blk), tx.TxHash()) {
		t.Fatalf("generate did not mine tx %s", tx.TxHash())
	}
	if _, err := node.Generate(ctx, e2eTailBlocks); err != nil {
		t.Fatal(err)
	}
	if _, h := mustBest(ctx, t, node); h != e2eChainHeight {
		t.Fatalf("btcd at %d, want %d", h, e2eChainHeight)
	}
	return watched, tx.TxHash(), e2eChainHeight - e2eTailBlocks
}

// startNeutrino starts a neutrino ChainService with a fresh database whose
// only peer is addr. Neutrino's log (info and above) goes to the returned
// lightclient.Log; its tail is printed when the test fails.
func startNeutrino(t *testing.T, params *chaincfg.Params, addr string) (*neutrino.ChainService, *lightclient.Log) {
	t.Helper()
	nlog := lightclient.CaptureLog(btclog.LevelInfo)
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range nlog.Tail(60) {
				t.Log("neutrino: " + l)
			}
		}
	})
	cs, err := lightclient.Start(context.Background(), t.TempDir(), params, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cs.Close)
	return cs.ChainService, nlog
}

// mustBest returns btcd's tip.
func mustBest(ctx context.Context, t *testing.T, node *btcdtest.Node) (chainhash.Hash, int32) {
	t.Helper()
	hash, height, err := node.BestBlock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return hash, height
}

// waitNeutrinoTip waits until neutrino's block-header tip is tip and its
// filter-header tip is the same block with btcd's filter header.
func waitNeutrinoTip(t *testing.T, cs *neutrino.ChainService, node *btcdtest.Node, tip chainhash.Hash) {
	t.Helper()
	want, err := node.CFilterHeader(context.Background(), tip)
	if err != nil {
		t.Fatal(err)
	}
	var last string
	ok := pollUntil(e2eWait, func() bool {
		best, err := cs.BestBlock()
		if err != nil {
			last = err.Error()
			return false
		}
		fh, fhHeight, err := cs.RegFilterHeaders.ChainTip()
		if err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprintf("block tip %d %s, filter-header tip %d %s", best.Height, best.Hash, fhHeight, fh)
		return best.Hash == tip && int32(fhHeight) == best.Height && *fh == want
	})
	if !ok {
		t.Fatalf("neutrino did not reach tip %s (filter header %s) within %v; last: %s", tip, want, e2eWait, last)
	}
}

// compareFilters checks, for every height up to tip, that neutrino's block
// hash is btcd's and the filter neutrino returns is btcd's getcfilter.
func compareFilters(ctx context.Context, t *testing.T, cs *neutrino.ChainService, node *btcdtest.Node, tip int32) {
	t.Helper()
	hashes := make([]chainhash.Hash, tip+1)
	filters := make([][]byte, tip+1)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for h := int32(0); h <= tip; h++ {
		g.Go(func() error {
			hash, err := node.BlockHash(gctx, h)
			if err != nil {
				return err
			}
			f, err := node.CFilter(gctx, hash)
			hashes[h], filters[h] = hash, f
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("btcd filters: %v", err)
	}
	for h := int32(0); h <= tip; h++ {
		got, err := cs.GetBlockHash(int64(h))
		if err != nil {
			t.Fatalf("neutrino block hash at %d: %v", h, err)
		}
		if *got != hashes[h] {
			t.Fatalf("neutrino has block %s at %d, btcd %s", got, h, hashes[h])
		}
		f, err := cs.GetCFilter(hashes[h], wire.GCSFilterRegular, neutrino.OptimisticBatch())
		if err != nil {
			t.Fatalf("neutrino GetCFilter at %d: %v", h, err)
		}
		raw, err := f.NBytes()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(raw, filters[h]) {
			t.Fatalf("filter at %d from neutrino differs from btcd's getcfilter", h)
		}
	}
}

// compareFilterAt checks one block's filter from neutrino against btcd.
func compareFilterAt(ctx context.Context, t *testing.T, cs *neutrino.ChainService, node *btcdtest.Node, hash chainhash.Hash, height int32) {
	t.Helper()
	want, err := node.CFilter(ctx, hash)
	if err != nil {
		t.Fatal(err)
	}
	f, err := cs.GetCFilter(hash, wire.GCSFilterRegular)
	if err != nil {
		t.Fatalf("neutrino GetCFilter at %d: %v", height, err)
	}
	if got, err := f.NBytes(); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("filter at %d from neutrino differs from btcd's getcfilter (%v)", height, err)
	}
}

// rescanMatch is a transaction a rescan reported.
type rescanMatch struct {
	height int32
	txid   chainhash.Hash
}

// rescanFor runs neutrino's Rescan over blocks (from, to] watching addr and
// returns every relevant transaction it reported.
func rescanFor(t *testing.T, cs *neutrino.ChainService, addr address.Address, from, to int32) []rescanMatch {
	t.Helper()
	fromHash, err := cs.GetBlockHash(int64(from))
	if err != nil {
		t.Fatal(err)
	}
	toHash, err := cs.GetBlockHash(int64(to))
	if err != nil {
		t.Fatal(err)
	}
	var found []rescanMatch
	var last int32
	quit := make(chan struct{})
	defer close(quit)
	rescan := neutrino.NewRescan(&neutrino.RescanChainSource{ChainService: cs},
		neutrino.StartBlock(&headerfs.BlockStamp{Height: from, Hash: *fromHash}),
		neutrino.EndBlock(&headerfs.BlockStamp{Height: to, Hash: *toHash}),
		neutrino.WatchAddrs(addr),
		neutrino.QuitChan(quit),
		// Handlers run on the rescan's goroutine, which has exited when
		// its error arrives below.
		neutrino.NotificationHandlers(rpcclient.NotificationHandlers{
			OnFilteredBlockConnected: func(height int32, _ *wire.BlockHeader, txs []*btcutil.Tx) {
				last = height
				for _, tx := range txs {
					found = append(found, rescanMatch{height: height, txid: *tx.Hash()})
				}
			},
		}),
	)
	select {
	case err := <-rescan.Start():
		if err != nil {
			t.Fatalf("rescan: %v", err)
		}
	case <-time.After(e2eWait):
		t.Fatalf("rescan did not finish within %v", e2eWait)
	}
	if last != to {
		t.Fatalf("rescan stopped at %d, want %d", last, to)
	}
	return found
}

// blockHasTx reports whether blk contains txid.
func blockHasTx(blk *btcutil.Block, txid chainhash.Hash) bool {
	for _, tx := range blk.Transactions() {
		if *tx.Hash() == txid {
			return true
		}
	}
	return false
}

// countLogs counts the daemon's log lines so far that satisfy pred.
func (d *daemonProc) countLogs(pred func(map[string]any) bool) int {
	n := 0
	for _, l := range d.log.Lines() {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && pred(m) {
			n++
		}
	}
	return n
}

// getMetrics returns the body of cfindexd's /metrics.
func getMetrics(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(body)
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return strings.Join(out, "\n")
}

// pollUntil checks cond every 10 ms until it holds (true) or limit passes
// (false).
func pollUntil(limit time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			return cond()
		case <-tick.C:
		}
	}
	return true
}
