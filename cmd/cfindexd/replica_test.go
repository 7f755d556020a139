package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/p2pclient"
	"github.com/cfindexd/cfindexd/internal/tcptest"
	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/replica/layouttest"
)

// replicaChainHeight is the primary's chain in the replica tests: one
// whole range final under reorgsafetydepth 6, and a few blocks above it
// for the replica to follow from its primary.
const replicaChainHeight = 2012

// replicaPrimary is a btcd and a cfindexd indexing it.
type replicaPrimary struct {
	node         *btcdtest.Node
	d            *daemonProc
	httpURL, p2p string
	datadir      string
}

func startReplicaPrimary(t *testing.T, ctx context.Context) *replicaPrimary {
	t.Helper()
	return startReplicaPrimaryWith(t, ctx)
}

// startReplicaPrimaryWith is startReplicaPrimary with more daemon flags.
func startReplicaPrimaryWith(t *testing.T, ctx context.Context, extra ...string) *replicaPrimary {
	t.Helper()
	node := btcdtest.Start(t, btcdtest.Options{Net: "regtest", TxIndex: true})
	if _, err := node.Generate(ctx, replicaChainHeight); err != nil {
		t.Fatal(err)
	}
	p := &replicaPrimary{node: node, datadir: t.TempDir(), p2p: tcptest.FreeAddr(t)}
	httpAddr := tcptest.FreeAddr(t)
	p.httpURL = "http://" + httpAddr
	args := withoutFlag(withoutFlag(nodeArgs(node, "regtest", p.datadir), "httplisten"), "listen")
	args = append(args, "--pollinterval=100ms", "--reorgsafetydepth=6", "--httplisten="+httpAddr, "--listen="+p.p2p)
	p.d = startDaemon(t, append(args, extra...)...)
	p.d.waitLog(testtime.Scale(3*time.Minute), heightAtLeast(replicaChainHeight))
	return p
}

// layoutOf copies the published layout a primary's HTTP serves (its
// final range 0: what its publisher writes to a bucket).
func layoutOf(t *testing.T, base string) layouttest.Layout {
	t.Helper()
	l := layouttest.Layout{}
	for _, name := range []string{"latest", "manifest.json", "headers/0", "filter-headers/0", "filters/0"} {
		status, _, body := get(t, base+"/"+name, nil)
		if status != 200 {
			t.Fatalf("GET /%s: %d %s", name, status, body)
		}
		l[name] = body
	}
	return l
}

// replicaArgs runs a replica of the primary from source.
func replicaArgs(datadir, source, primary, httpAddr, p2pAddr string) []string {
	args := []string{"--chain=regtest", "--datadir=" + datadir, "--replicasource=" + source,
		"--pollinterval=100ms", "--reorgsafetydepth=6", "--httplisten=" + httpAddr, "--listen=" + p2pAddr}
	if primary != "" {
		args = append(args, "--replicaprimary="+primary)
	}
	return args
}

// blockBytes is blk serialized, witness included.
func blockBytes(t *testing.T, blk *wire.MsgBlock) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := blk.Serialize(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// waitIndexed polls base's /status until the indexed tip is hash.
func waitIndexed(t *testing.T, base string, height int, hash chainhash.Hash) {
	t.Helper()
	deadline := time.Now().Add(testtime.Scale(90 * time.Second))
	var last string
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/status")
		if err == nil {
			var st struct {
				IndexedHeight *int64 `json:"indexed_height"`
				IndexedHash   string `json:"indexed_hash"`
			}
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if err == nil && st.IndexedHeight != nil && *st.IndexedHeight == int64(height) && st.IndexedHash == hash.String() {
				return
			}
			if st.IndexedHeight != nil {
				last = fmt.Sprintf("%d %s", *st.IndexedHeight, st.IndexedHash)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: indexed tip never became %d %s (last %s)", base, height, hash, last)
}

// checkServesLikeNode checks the replica's filters of heights over P2P
// against btcd's getcfilter, the blocks it gets from its primary for a
// light client's getdata against btcd's getblock, and its HTTP bulk files
// byte for byte against the primary's.
func checkServesLikeNode(t *testing.T, ctx context.Context, node *btcdtest.Node, replicaP2P, replicaHTTP, primaryHTTP string, tip int32) {
	t.Helper()
	peer, err := p2pclient.Dial(ctx, replicaP2P, p2pclient.Options{Params: node.Params()})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	for _, span := range [][2]int32{{0, 999}, {1000, 1999}, {2000, tip}} {
		hashes := make([]chainhash.Hash, 0, span[1]-span[0]+1)
		for h := span[0]; h <= span[1]; h++ {
			hashes = append(hashes, mustHash(t, node, h))
		}
		filters, err := peer.GetCFilters(ctx, uint32(span[0]), hashes[len(hashes)-1], hashes)
		if err != nil {
			t.Fatalf("replica getcfilters %d..%d: %v", span[0], span[1], err)
		}
		for i, f := range filters {
			h := span[0] + int32(i)
			if h%97 != 0 && h < tip-20 {
				continue // btcd's getcfilter for a sample and the tip's neighbours
			}
			want, err := node.CFilter(ctx, hashes[i])
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(f, want) {
				t.Fatalf("height %d: the replica's filter differs from btcd's getcfilter", h)
			}
		}
	}
	heights := []int32{1, 1000, tip - 1, tip}
	hashes := make([]chainhash.Hash, len(heights))
	for i, h := range heights {
		hashes[i] = mustHash(t, node, h)
	}
	blocks, err := peer.GetBlocks(ctx, hashes, true)
	if err != nil {
		t.Fatalf("replica getdata of blocks %v: %v", heights, err)
	}
	for i, b := range blocks {
		want, err := node.Block(ctx, hashes[i])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(blockBytes(t, b.Block), blockBytes(t, want)) {
			t.Fatalf("block %d from the replica differs from btcd's getblock", heights[i])
		}
	}
	for _, path := range []string{"/bulk/headers/0-1999.bin", "/bulk/filterheaders/0-1999.bin", "/bulk/filters/0.bin",
		fmt.Sprintf("/bulk/headers/2000-%d.bin", tip), fmt.Sprintf("/bulk/filterheaders/2000-%d.bin", tip)} {
		s1, _, replicaBody := get(t, replicaHTTP+path, nil)
		s2, _, primaryBody := get(t, primaryHTTP+path, nil)
		if s1 != 200 || s2 != 200 || !bytes.Equal(replicaBody, primaryBody) {
			t.Fatalf("%s: replica %d (%d bytes), primary %d (%d bytes): not byte-identical", path, s1, len(replicaBody), s2, len(primaryBody))
		}
	}
}

// TestReplicaBootstrapsFollowsAndReorgs: a replica with no node
// bootstraps from the layout its primary's HTTP serves (the final range),
// follows the primary over P2P to its tip, serves filters identical to
// btcd's getcfilter and bulk files identical to the primary's, is ready,
// follows new blocks and a reorg (btcd invalidateblock and a longer
// branch) through its primary, and after kill -9 resumes from its store
// (a copy of the layout as its source: no range is fetched again).
func TestReplicaBootstrapsFollowsAndReorgs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(6*time.Minute))
	defer cancel()
	p := startReplicaPrimary(t, ctx)
	srv := layouttest.Serve(t, layoutOf(t, p.httpURL), "/bucket")

	rdir, rhttp, rp2p := t.TempDir(), tcptest.FreeAddr(t), tcptest.FreeAddr(t)
	rbase := "http://" + rhttp
	r := startDaemon(t, replicaArgs(rdir, p.httpURL, p.p2p, rhttp, rp2p)...)
	r.waitLog(testtime.Scale(2*time.Minute), msgIs("replica bootstrap: done"))
	waitIndexed(t, rbase, replicaChainHeight, mustHash(t, p.node, replicaChainHeight))
	waitHTTP(t, rbase+"/readyz", 200, `"ready":true`)
	// The replica follows its primary over BIP-324 v2.
	waitHTTP(t, p.httpURL+"/status", 200, `{"transport":"v2","peers":1,`)
	checkServesLikeNode(t, ctx, p.node, rp2p, rbase, p.httpURL, replicaChainHeight)

	// New blocks, then a reorg: two blocks replaced by three.
	if _, err := p.node.Generate(ctx, 3); err != nil {
		t.Fatal(err)
	}
	tip := int32(replicaChainHeight + 3)
	waitIndexed(t, rbase, int(tip), mustHash(t, p.node, tip))
	old := mustHash(t, p.node, tip-1)
	if err := p.node.InvalidateBlock(ctx, old); err != nil {
		t.Fatal(err)
	}
	if _, err := p.node.Generate(ctx, 3); err != nil {
		t.Fatal(err)
	}
	tip += 1
	if mustHash(t, p.node, tip-2) == old {
		t.Fatal("btcd did not reorganise")
	}
	waitIndexed(t, rbase, int(tip), mustHash(t, p.node, tip))
	r.waitLog(testtime.Scale(30*time.Second), msgIs("replica: the primary reorganised; following"))
	checkServesLikeNode(t, ctx, p.node, rp2p, rbase, p.httpURL, tip)

	// kill -9 and restart: nothing to bootstrap, the follower goes on.
	r.kill9()
	if _, err := p.node.Generate(ctx, 2); err != nil {
		t.Fatal(err)
	}
	tip += 2
	r2 := startDaemon(t, replicaArgs(rdir, srv.URL+"/bucket", p.p2p, rhttp, rp2p)...)
	r2.waitLog(testtime.Scale(time.Minute), msgIs("replica bootstrap: the store already holds every published range"))
	waitIndexed(t, rbase, int(tip), mustHash(t, p.node, tip))
	if n := srv.Requests("filters/0"); n != 0 {
		t.Fatalf("filters/0 fetched %d times by a restart with the range stored, want never", n)
	}
}

// TestReplicaRefusesDamagedSource: a source with one flipped byte in a
// filter, a header or the manifest stops the replica at start with exit
// code 1 and a last line naming the object; its HTTP and P2P addresses
// never answer and no store is left behind.
func TestReplicaRefusesDamagedSource(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(5*time.Minute))
	defer cancel()
	p := startReplicaPrimary(t, ctx)
	good := layoutOf(t, p.httpURL)
	for _, tc := range []struct {
		name, object string
		at           func(b []byte) int
		want         string
	}{
		{"filter", "filters/0", func(b []byte) int { return len(b) / 2 }, "filters/0: sha256 mismatch"},
		{"header", "headers/0", func(b []byte) int { return 80*1500 + 70 }, "headers/0: sha256 mismatch"},
		{"manifest", "manifest.json", func(b []byte) int { return bytes.Index(b, []byte(`"end_block_hash":"`)) + 30 }, "manifest.json: sha256 mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			layout := layouttest.Layout{}
			for k, v := range good {
				layout[k] = v
			}
			layout[tc.object] = layouttest.Flip(layout[tc.object], tc.at(layout[tc.object]))
			srv := layouttest.Serve(t, layout, "")
			rdir, rhttp, rp2p := t.TempDir(), tcptest.FreeAddr(t), tcptest.FreeAddr(t)
			r := startDaemon(t, replicaArgs(rdir, srv.URL, p.p2p, rhttp, rp2p)...)
			code, last := r.wait(testtime.Scale(time.Minute))
			if code != 1 || !strings.Contains(last, tc.want) {
				t.Fatalf("exit code %d, last line %q; want 1 and %q", code, last, tc.want)
			}
			for _, addr := range []string{rhttp, rp2p} {
				if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
					c.Close()
					t.Fatalf("%s answers after the refusal", addr)
				}
			}
			// Nothing was committed: the store the start created is gone.
			if _, err := os.Stat(filepath.Join(rdir, "regtest", storeFileName)); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("the refused start left a store behind: %v", err)
			}
		})
	}
}

// TestReplicaModes: with replicasource alone, a replica stores the
// published ranges and is ready at the source's newest range, /status
// naming the source as its upstream; with replicaprimary alone, it fetches
// every block's filter from the primary over P2P, from genesis, and serves
// what btcd serves.
func TestReplicaModes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(5*time.Minute))
	defer cancel()
	p := startReplicaPrimary(t, ctx)

	t.Run("source only", func(t *testing.T) {
		rhttp := tcptest.FreeAddr(t)
		startDaemon(t, replicaArgs(t.TempDir(), p.httpURL, "", rhttp, tcptest.FreeAddr(t))...)
		waitIndexed(t, "http://"+rhttp, 1999, mustHash(t, p.node, 1999))
		waitHTTP(t, "http://"+rhttp+"/readyz", 200, `"ready":true`)
		waitHTTP(t, "http://"+rhttp+"/status", 200, `"address":"`+p.httpURL+`","reachable":true,"kind":"published-layout"`)
	})
	t.Run("primary only", func(t *testing.T) {
		rhttp, rp2p := tcptest.FreeAddr(t), tcptest.FreeAddr(t)
		args := withoutFlag(replicaArgs(t.TempDir(), "", p.p2p, rhttp, rp2p), "replicasource")
		startDaemon(t, args...)
		waitIndexed(t, "http://"+rhttp, replicaChainHeight, mustHash(t, p.node, replicaChainHeight))
		waitHTTP(t, "http://"+rhttp+"/readyz", 200, `"ready":true`)
		checkServesLikeNode(t, ctx, p.node, rp2p, "http://"+rhttp, p.httpURL, replicaChainHeight)
	})
}

// TestReplicaRefusesDeepReorg: a primary that follows a reorg deeper than
// reorgsafetydepth (allowdeepreorg) does not take its replica along: the
// replica stops with exit code 1 and a line that says why, its store
// still on the old branch.
func TestReplicaRefusesDeepReorg(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(5*time.Minute))
	defer cancel()
	p := startReplicaPrimaryWith(t, ctx, "--allowdeepreorg=true")
	rdir, rhttp := t.TempDir(), tcptest.FreeAddr(t)
	r := startDaemon(t, replicaArgs(rdir, p.httpURL, p.p2p, rhttp, tcptest.FreeAddr(t))...)
	old := mustHash(t, p.node, replicaChainHeight)
	waitIndexed(t, "http://"+rhttp, replicaChainHeight, old)

	// Ten blocks replaced by eleven: deeper than the replica's 6.
	if err := p.node.InvalidateBlock(ctx, mustHash(t, p.node, replicaChainHeight-9)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.node.Generate(ctx, 11); err != nil {
		t.Fatal(err)
	}
	code, last := r.wait(testtime.Scale(2 * time.Minute))
	if code != 1 || !strings.Contains(last, "reorg deeper than reorgsafetydepth") || !strings.Contains(last, "reorgsafetydepth is 6") {
		t.Fatalf("exit code %d, last line %q", code, last)
	}
	st := openStoreAfterExit(t, rdir, "regtest", p.node.Params())
	if tip, ok := st.Tip(); !ok || tip.Height != replicaChainHeight || tip.Hash != old {
		t.Fatalf("replica store tip %d %s after the refusal, want the old %d %s", tip.Height, tip.Hash, replicaChainHeight, old)
	}
}
