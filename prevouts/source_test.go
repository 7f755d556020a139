package prevouts

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/internal/corefixture"
	"github.com/cfindexd/cfindexd/nodeclient"
)

// Every recorded block, fetched through each of the three prevout modes,
// yields the recorded block bytes and the recorded spent scripts.
func TestFetchBlockAllModesAgree(t *testing.T) {
	fx := corefixture.Load(t)
	c, srv := newFixtureClient(t, fx, corefixture.Options{})
	ctx := testCtx(t)
	modes := []string{ModeREST, ModeGetBlock3, ModeTxIndex}
	sources := make(map[string]BlockSource)
	for _, m := range modes {
		src, err := NewSource(c, m, SourceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sources[m] = src
	}
	inputs := 0
	// The recorded blocks (incl. the stale ones), then the derived
	// coinbase-only blocks h0–h94.
	for _, b := range append(append([]*corefixture.Block(nil), fx.Blocks...), fx.Early...) {
		want := expectedPrevScripts(t, b)
		inputs += len(want)
		for _, m := range modes {
			blk, prev, err := sources[m].FetchBlock(ctx, b.Hash)
			if err != nil {
				t.Fatalf("%s via %s: %v", b.Name(), m, err)
			}
			if got := serializeBlock(t, blk); !bytes.Equal(got, b.Raw) {
				t.Errorf("%s via %s: block bytes differ from getblock 0", b.Name(), m)
			}
			if !equalScripts(prev, want) {
				t.Errorf("%s via %s: prevScripts differ (%d vs %d)", b.Name(), m, len(prev), len(want))
			}
		}
	}
	if inputs < 80 {
		t.Fatalf("only %d inputs checked", inputs)
	}
	// The txindex mode batches, and its LRU (fed by every block) means
	// in-chain spends of recent outputs need no call at all.
	if srv.Batches() == 0 {
		t.Error("txindex mode never sent a JSON-RPC batch")
	}
	if n := srv.Calls("getrawtransaction"); n >= inputs {
		t.Errorf("txindex mode made %d getrawtransaction calls for %d inputs; cache not used", n, inputs)
	}
}

// With a cold cache every prevout outside the block comes from one batch
// per block, and in-block spends (h111's 6-tx chain) need no call.
func TestTxIndexBatchesColdCache(t *testing.T) {
	fx := corefixture.Load(t)
	c, srv := newFixtureClient(t, fx, corefixture.Options{})
	src, err := NewSource(c, ModeTxIndex, SourceOptions{ScriptCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	// h111: a 6-transaction chain inside one block; only X1's input
	// spends an output from an earlier block.
	h111, _ := chainhash.NewHashFromStr("4ad1b5be3a48cd91cef33f1a797e0eea583c2fb2b4f219f1b11efcc6282effc6")
	blk, _, err := src.FetchBlock(testCtx(t), *h111)
	if err != nil {
		t.Fatal(err)
	}
	inBlock := map[chainhash.Hash]bool{}
	for _, tx := range blk.Transactions {
		inBlock[tx.TxHash()] = true
	}
	external, inputs := map[chainhash.Hash]bool{}, 0
	for _, tx := range blk.Transactions[1:] {
		for _, in := range tx.TxIn {
			inputs++
			if !inBlock[in.PreviousOutPoint.Hash] {
				external[in.PreviousOutPoint.Hash] = true
			}
		}
	}
	if inputs != 7 || len(external) != 1 {
		t.Fatalf("fixture changed: %d inputs, %d external", inputs, len(external))
	}
	if got := srv.Calls("getrawtransaction"); got != len(external) {
		t.Errorf("getrawtransaction calls: got %d, want %d", got, len(external))
	}
	if got := srv.Batches(); got != 1 {
		t.Errorf("batches: got %d, want 1", got)
	}
	// X1's one external input came from the node, the 6 in-block ones
	// from the run's own cache.
	if fromCache, fromNode := src.(*txIndexSource).PrevoutCounts(); fromCache != 6 || fromNode != 1 {
		t.Errorf("prevout counts: %d from cache, %d from the node; want 6 and 1", fromCache, fromNode)
	}
}

func TestDetectSource(t *testing.T) {
	fx := corefixture.Load(t)
	tests := []struct {
		name     string
		opts     corefixture.Options
		wantMode string
		wantErr  error
		wantMsg  string
	}{
		{name: "core31 with rest", opts: corefixture.Options{}, wantMode: ModeREST},
		{name: "core31 without rest", opts: corefixture.Options{DisableREST: true}, wantMode: ModeGetBlock3},
		{name: "core29 with rest has no spenttxouts", opts: corefixture.Options{Version: 290100}, wantMode: ModeGetBlock3},
		{name: "core22 with txindex", opts: corefixture.Options{Version: 220000}, wantMode: ModeTxIndex},
		{name: "core22 without txindex", opts: corefixture.Options{Version: 220000, NoTxIndex: true}, wantErr: nodeclient.ErrNoPrevoutSource, wantMsg: "-txindex=1"},
		{name: "btcd with txindex", opts: corefixture.Options{Btcd: true}, wantMode: ModeTxIndex},
		{name: "btcd without txindex", opts: corefixture.Options{Btcd: true, NoTxIndex: true}, wantErr: nodeclient.ErrNoPrevoutSource, wantMsg: "--txindex"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newFixtureClient(t, fx, tt.opts)
			src, err := DetectSource(testCtx(t), c, testLogger(t))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantMsg) {
					t.Fatalf("got %v, want %v mentioning %q", err, tt.wantErr, tt.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if src.Mode() != tt.wantMode {
				t.Fatalf("mode %s, want %s", src.Mode(), tt.wantMode)
			}
			// The detected source works against the same node.
			if _, _, err := src.FetchBlock(testCtx(t), fx.Tip); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestFetchBlockErrors(t *testing.T) {
	fx := corefixture.Load(t)
	unknown := chainhash.Hash{1}
	h100, _ := fx.ActiveHash(100)
	for _, mode := range []string{ModeREST, ModeGetBlock3, ModeTxIndex} {
		t.Run(mode, func(t *testing.T) {
			c, _ := newFixtureClient(t, fx, corefixture.Options{PrunedBelow: 101})
			src, _ := NewSource(c, mode, SourceOptions{})
			if _, _, err := src.FetchBlock(testCtx(t), unknown); !errors.Is(err, nodeclient.ErrBlockNotFound) {
				t.Errorf("unknown block: %v, want nodeclient.ErrBlockNotFound", err)
			}
			if _, _, err := src.FetchBlock(testCtx(t), h100); !errors.Is(err, nodeclient.ErrPruned) {
				t.Errorf("pruned block: %v, want nodeclient.ErrPruned", err)
			}
		})
	}
}

// A node still loading its block index makes detection fail with
// ErrWarmup (callers retry), not with a wrong guess about the node.
func TestDetectSourceDuringWarmup(t *testing.T) {
	fx := corefixture.Load(t)
	c, srv := newFixtureClient(t, fx, corefixture.Options{})
	srv.SetWarmup(true)
	if _, err := DetectSource(testCtx(t), c, testLogger(t)); !errors.Is(err, nodeclient.ErrWarmup) {
		t.Fatalf("got %v, want nodeclient.ErrWarmup", err)
	}
	srv.SetWarmup(false)
	src, err := DetectSource(testCtx(t), c, testLogger(t))
	if err != nil || src.Mode() != ModeREST {
		t.Fatalf("after warmup: %v, %v", src, err)
	}
}

// A forced prevout source is checked as detection would check it: the
// node must serve it, or DetectSource says which option to turn on.
func TestForcedSourceChecked(t *testing.T) {
	fx := corefixture.Load(t)
	for _, tc := range []struct {
		name string
		opts corefixture.Options
		mode string
		want string // "" = accepted
	}{
		{"rest on Core 31 with -rest", corefixture.Options{}, ModeREST, ""},
		{"rest without -rest", corefixture.Options{DisableREST: true}, ModeREST, "-rest=1"},
		{"rest on btcd", corefixture.Options{Btcd: true}, ModeREST, "btcd has no REST interface"},
		{"getblock on Core 31", corefixture.Options{DisableREST: true}, ModeGetBlock3, ""},
		{"getblock on Core 22", corefixture.Options{Version: 220000}, ModeGetBlock3, "needs Bitcoin Core >= 23"},
		{"txindex with an index", corefixture.Options{}, ModeTxIndex, ""},
		{"txindex without", corefixture.Options{NoTxIndex: true}, ModeTxIndex, "-txindex=1 (btcd: --txindex)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newFixtureClient(t, fx, tc.opts)
			src, err := DetectSource(testCtx(t), c, testLogger(t), SourceOptions{Force: tc.mode})
			if tc.want == "" {
				if err != nil || src.Mode() != tc.mode {
					t.Fatalf("got %v, %v; want %s", src, err, tc.mode)
				}
				return
			}
			if !errors.Is(err, nodeclient.ErrNoPrevoutSource) || !nodeclient.IsPermanent(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want nodeclient.ErrNoPrevoutSource naming %q", err, tc.want)
			}
		})
	}
}
