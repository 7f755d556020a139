package httpapi

import (
	"bytes"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/v2"

	"github.com/cfindexd/cfindexd/store"
)

// TestRealStoreMatchesFake runs the same requests against a server over a
// real bbolt store and one over the in-memory fake holding the same chain
// (including a reorg, so stale blocks exist) and requires identical
// answers: status, Content-Type, ETag, Cache-Control and body.
func TestRealStoreMatchesFake(t *testing.T) {
	const (
		height = 2300
		fork   = 2250
	)
	chain := synthChain(t, height, 11)
	branch := extendChain(t, chain[:fork+1], 60, 12)

	st, err := store.Open(filepath.Join(t.TempDir(), "filters.db"), *chaincfg.RegressionNetParams.GenesisHash, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := 0; i < len(chain); i += 500 {
		if err := st.CommitBatch(storeRecords(chain[i:min(i+500, len(chain))])); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Rollback(fork); err != nil {
		t.Fatal(err)
	}
	if err := st.CommitBatch(storeRecords(branch[fork+1:])); err != nil {
		t.Fatal(err)
	}

	fv := synthView(t, chain)
	fv.rollback(fork)
	fv.commit(branch[fork+1:]...)

	cfg := Config{Net: chaincfg.RegressionNetParams.Net, ReorgSafetyDepth: 100}
	real := newTestServer(t, newStoreView(st), cfg).Handler()
	fake := newTestServer(t, fv, cfg).Handler()

	tip := branch[len(branch)-1]
	var urls []string
	for _, r := range []string{chain[0].Hash.String(), chain[1999].Hash.String(), chain[fork+1].Hash.String(), chain[height].Hash.String(), tip.Hash.String(), branch[fork+1].Hash.String()} {
		for _, ext := range []string{".bin", ".hex", ".json", ""} {
			urls = append(urls,
				"/rest/blockfilter/basic/"+r+ext,
				"/rest/blockfilterheaders/basic/"+r+ext+"?count=2000",
				"/rest/blockfilterheaders/basic/"+r+ext,
				"/rest/headers/"+r+ext+"?count=2000")
		}
	}
	for _, hgt := range []string{"0", "1999", "2251", "2310", "2311"} {
		urls = append(urls, "/rest/blockhashbyheight/"+hgt+".hex", "/rest/blockhashbyheight/"+hgt+".bin")
	}
	urls = append(urls, "/bulk/index.json", "/bulk/neutrino/blockheaders.bin", "/bulk/neutrino/filterheaders/0-2200.bin")
	for start := 0; start <= int(tip.Height); start += BulkInterval {
		end := min(start+BulkInterval-1, int(tip.Height))
		urls = append(urls,
			fmt.Sprintf("/bulk/headers/%d-%d.bin", start, end),
			fmt.Sprintf("/bulk/filterheaders/%d-%d.bin", start, end),
			fmt.Sprintf("/bulk/filters/%d.bin", start))
	}
	urls = append(urls, fmt.Sprintf("/bulk/headers/2000-%d.bin", tip.Height+1))

	for _, u := range urls {
		rr, fr := do(t, real, http.MethodGet, u, nil), do(t, fake, http.MethodGet, u, nil)
		rb, fb := body(t, rr), body(t, fr)
		if rr.StatusCode != fr.StatusCode || !bytes.Equal(rb, fb) {
			t.Errorf("%s: store %d (%d bytes), fake %d (%d bytes)", u, rr.StatusCode, len(rb), fr.StatusCode, len(fb))
			continue
		}
		for _, k := range []string{"Content-Type", "ETag", "Cache-Control"} {
			if rr.Header.Get(k) != fr.Header.Get(k) {
				t.Errorf("%s: %s %q vs %q", u, k, rr.Header.Get(k), fr.Header.Get(k))
			}
		}
	}
	// The stale block is still served, and its header list is empty.
	stale := chain[fork+1].Hash.String()
	if r := do(t, real, "GET", "/rest/blockfilter/basic/"+stale+".hex", nil); r.StatusCode != 200 {
		t.Errorf("stale filter: %d", r.StatusCode)
	}
	if r := do(t, real, "GET", "/rest/blockfilterheaders/basic/"+stale+".json", nil); string(body(t, r)) != "[]\n" {
		t.Errorf("stale filter headers not empty")
	}
}
