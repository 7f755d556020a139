package p2pclient

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/bloom"
	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/internal/btcdtest"
)

// Against a real btcd, over v1 and over BIP-324 v2 (btcd's own responder,
// --v2transport, which serves both on one port): headers from genesis,
// the filter checkpoints, filter headers and filters (each equal to btcd's
// getcfilter and chaining to its checkpoints), blocks, and BIP-37 filtered
// blocks that verify.
func TestPeerAgainstBtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts btcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{Extra: []string{"--v2transport"}})
	if err := btcdtest.BuildTxRichChain(ctx, node, node.Wallet(), 15); err != nil {
		t.Fatal(err)
	}
	if _, err := node.Generate(ctx, 1000-115+5); err != nil { // past one checkpoint
		t.Fatal(err)
	}
	tipHash, tip, err := node.BestBlock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ask, want Transport
	}{
		{TransportV1, TransportV1}, {TransportV2, TransportV2}, {TransportAuto, TransportV2},
	} {
		t.Run(tc.ask.String(), func(t *testing.T) {
			peerAgainstBtcd(ctx, t, node, tc.ask, tc.want, tip, tipHash)
		})
	}
}

func peerAgainstBtcd(ctx context.Context, t *testing.T, node *btcdtest.Node, ask, want Transport, tip int32, tipHash chainhash.Hash) {
	p, err := Dial(ctx, node.P2PAddr(), Options{Params: node.Params(), Require: wire.SFNodeCF | wire.SFNodeBloom, Transport: ask})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Transport() != want || p.Version().Services&wire.SFNodeP2PV2 == 0 {
		t.Fatalf("transport %v, want %v; services %v", p.Transport(), want, p.Version().Services)
	}

	var chain []chainhash.Hash
	chain = append(chain, *node.Params().GenesisHash)
	for {
		hs, err := p.GetHeaders(ctx, []chainhash.Hash{chain[len(chain)-1]}, chainhash.Hash{})
		if err != nil {
			t.Fatal(err)
		}
		if len(hs) == 0 {
			break
		}
		for _, h := range hs {
			if h.PrevBlock != chain[len(chain)-1] {
				t.Fatal("headers do not chain")
			}
			chain = append(chain, h.BlockHash())
		}
	}
	if len(chain) != int(tip)+1 || chain[tip] != tipHash {
		t.Fatalf("%d headers, tip %s; btcd tip %d %s", len(chain), chain[len(chain)-1], tip, tipHash)
	}

	cps, err := p.GetCFCheckpt(ctx, tipHash)
	if err != nil || len(cps) != int(tip)/1000 {
		t.Fatalf("cfcheckpt: %d checkpoints, %v", len(cps), err)
	}
	prev, hashes, err := p.GetCFHeaders(ctx, 0, tipHash)
	if err != nil || prev != (chainhash.Hash{}) || len(hashes) != int(tip)+1 {
		t.Fatalf("cfheaders from genesis: prev %s, %d hashes, %v", prev, len(hashes), err)
	}
	header := prev
	for h, fh := range hashes {
		header = headers.FilterHeaderFromHash(fh, header)
		if h > 0 && h%1000 == 0 && header != cps[h/1000-1] {
			t.Fatalf("filter header at %d differs from the checkpoint", h)
		}
	}
	if want, err := node.CFilterHeader(ctx, tipHash); err != nil || header != want {
		t.Fatalf("filter header at the tip %s, btcd %s (%v)", header, want, err)
	}
	filters, err := p.GetCFilters(ctx, 100, chain[130], chain[100:131])
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range filters {
		want, err := node.CFilter(ctx, chain[100+i])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(f, want) || headers.FilterHash(f) != hashes[100+i] {
			t.Fatalf("filter at %d differs from btcd's getcfilter or its filter hash", 100+i)
		}
	}

	blocks, err := p.GetBlocks(ctx, chain[110:116], true)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 6 || len(blocks[5].Block.Transactions) < 2 {
		t.Fatalf("blocks: %d", len(blocks))
	}
	// A filter holding one transaction's txid: its block proves it.
	target := blocks[5].Block.Transactions[1].TxHash()
	params, _ := bloom.ParamsFor(1, 0.0001)
	f := bloom.New(params, 7, wire.BloomUpdateNone)
	f.Insert(target[:])
	if err := p.LoadFilter(ctx, f); err != nil {
		t.Fatal(err)
	}
	fbs, err := p.GetFilteredBlocks(ctx, chain[110:116], false)
	if err != nil {
		t.Fatal(err)
	}
	for i, fb := range fbs {
		matches, err := fb.Verify(chain[110+i])
		if err != nil {
			t.Fatal(err)
		}
		if i == 5 && (len(matches) != 1 || matches[0].Txid != target) {
			t.Fatalf("block 115: matches %v, want %s", matches, target)
		}
	}
	if p.BytesRead() == 0 || p.BytesWritten() == 0 {
		t.Fatal("bytes not counted")
	}
}
