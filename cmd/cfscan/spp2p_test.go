package main

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/p2pclient"
	"github.com/cfindexd/cfindexd/p2p/spfilter"
	"github.com/cfindexd/cfindexd/silentpay"
)

// splitRecords splits an /sp/tweakdata or /sp/filters body into its
// CompactSize-prefixed records.
func splitRecords(t *testing.T, body []byte) [][]byte {
	t.Helper()
	r := bytes.NewReader(body)
	var out [][]byte
	for r.Len() > 0 {
		n, err := wire.ReadVarInt(r, 0)
		if err != nil || n > uint64(r.Len()) {
			t.Fatalf("record %d: length %d, %v", len(out), n, err)
		}
		rec := make([]byte, n)
		_, _ = r.Read(rec)
		out = append(out, rec)
	}
	return out
}

// TestSPFilterTypeOverP2P: on the regtest chain with silent-payment sends,
// a client that requires the experimental service bit fetches cfcheckpt,
// cfheaders and cfilters of the silent-payment type up to the tip; every
// block's data is the HTTP /sp/tweakdata and /sp/filters bytes, its
// commitment hash is silentpay's over them, and BIP-157's header rule over
// the cfheaders answer gives /sp/headers' chain.
func TestSPFilterTypeOverP2P(t *testing.T) {
	if testing.Short() {
		t.Skip("starts btcd and cfindexd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := buildSPChain(ctx, t)
	d := startSPDaemon(ctx, t, c.node, c.tip)
	peer, err := p2pclient.Dial(ctx, d.p2p, p2pclient.Options{Params: &chaincfg.RegressionNetParams, Require: wire.SFNodeCF | spfilter.ServiceFlag, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	tip := uint32(c.tip)
	hashes := make([]chainhash.Hash, tip+1)
	for h := range hashes {
		if hashes[h], err = c.node.BlockHash(ctx, int32(h)); err != nil {
			t.Fatal(err)
		}
	}
	stop := hashes[tip]
	cps, err := peer.GetCFCheckptOf(ctx, spfilter.FilterType, stop)
	if err != nil || len(cps) != int(tip/1000) {
		t.Fatalf("cfcheckpt: %d headers, %v; want %d", len(cps), err, tip/1000)
	}
	prev, commitments, err := peer.GetCFHeadersOf(ctx, spfilter.FilterType, 1, stop)
	if err != nil || prev != (chainhash.Hash{}) || len(commitments) != int(tip) {
		t.Fatalf("cfheaders 1..%d: prev %s, %d hashes, %v", tip, prev, len(commitments), err)
	}
	data, err := peer.GetCFiltersOf(ctx, spfilter.FilterType, 1, stop, hashes[1:])
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) []byte {
		body, code := httpGet(t, d.http+path)
		if code != http.StatusOK {
			t.Fatalf("%s: status %d", path, code)
		}
		return body
	}
	tweakData, filters, hdrs := splitRecords(t, get("/sp/tweakdata/0")), splitRecords(t, get("/sp/filters/0")), get("/sp/headers/0")
	if len(tweakData) != int(tip) || len(filters) != int(tip) || len(hdrs) != 128*int(tip) {
		t.Fatalf("HTTP: %d tweak data, %d filters, %d header bytes for %d heights", len(tweakData), len(filters), len(hdrs), tip)
	}
	withTweaks := 0
	for i := range data {
		h := i + 1
		td, f, err := spfilter.SplitData(data[i])
		if err != nil || !bytes.Equal(td, tweakData[i]) || !bytes.Equal(f, filters[i]) {
			t.Fatalf("height %d: P2P data differs from HTTP's (%v)", h, err)
		}
		if len(td) > 1 {
			withTweaks++
		}
		c := silentpay.NewCommitment(td, f)
		if got, _ := spfilter.DataCommitment(data[i]); got != c.Hash() || commitments[i] != c.Hash() {
			t.Fatalf("height %d: cfheaders hash %s, data's %s, silentpay's %s", h, commitments[i], got, c.Hash())
		}
		rec := hdrs[128*i : 128*(i+1)]
		want := c.Header(prev) // silentpay's chain over the data
		prev = spfilter.ChainHeader(commitments[i], prev)
		if !bytes.Equal(rec[:32], hashes[h][:]) || !bytes.Equal(rec[32:64], prev[:]) || prev != want {
			t.Fatalf("height %d: /sp/headers record %x, BIP-157's rule gives %s, silentpay %s", h, rec, prev, want)
		}
	}
	if want := len(c.txs); withTweaks == 0 || want == 0 {
		t.Fatalf("%d blocks with tweaks for %d sends: the chain tests nothing", withTweaks, want)
	}
}
