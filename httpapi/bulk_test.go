package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// bulkTip gives three files per kind: two full final ones and a partial one
// at the tip.
const bulkTip = 4321

func get200(tb testing.TB, h http.Handler, url string) []byte {
	tb.Helper()
	resp := do(tb, h, http.MethodGet, url, nil)
	b := body(tb, resp)
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("%s: %d %q", url, resp.StatusCode, b)
	}
	return b
}

// TestBulkFilesVerify downloads every bulk file of a 4,322-block chain the
// way a wallet would and verifies them: headers link by PrevBlock from
// genesis to the tip, and the filter-header chain recomputed from the
// served filters with dSHA256(dSHA256(filter)||prev) equals the served
// filter headers and the tip's.
func TestBulkFilesVerify(t *testing.T) {
	chain := synthChain(t, bulkTip, 1)
	s := newTestServer(t, synthView(t, chain), Config{})
	h := s.Handler()

	var idx bulkIndex
	if err := json.Unmarshal(get200(t, h, "/bulk/index.json"), &idx); err != nil {
		t.Fatal(err)
	}
	if idx.TipHeight != bulkTip || idx.FinalHeight != bulkTip-DefaultReorgSafetyDepth || idx.Interval != BulkInterval {
		t.Fatalf("index %+v", idx)
	}

	var (
		prevHash = chainhash.Hash{}
		prevFH   = chainhash.Hash{}
		height   uint32
	)
	for start := uint32(0); start <= bulkTip; start += BulkInterval {
		end := min(start+BulkInterval-1, bulkTip)
		hb := get200(t, h, fmt.Sprintf("/bulk/headers/%d-%d.bin", start, end))
		fhb := get200(t, h, fmt.Sprintf("/bulk/filterheaders/%d-%d.bin", start, end))
		fb := get200(t, h, fmt.Sprintf("/bulk/filters/%d.bin", start))
		n := int(end - start + 1)
		if len(hb) != n*80 || len(fhb) != n*32 {
			t.Fatalf("range %d-%d: %d header bytes, %d filter-header bytes", start, end, len(hb), len(fhb))
		}
		for i := range n {
			var hdr wire.BlockHeader
			if err := hdr.Deserialize(bytes.NewReader(hb[i*80 : (i+1)*80])); err != nil {
				t.Fatal(err)
			}
			if hdr.PrevBlock != prevHash {
				t.Fatalf("header %d does not link: prev %s, want %s", height, hdr.PrevBlock, prevHash)
			}
			prevHash = hdr.BlockHash()
			if prevHash != chain[height].Hash {
				t.Fatalf("header %d hashes to %s", height, prevHash)
			}
			flen, k, err := wirescan.ReadCompactSize(fb)
			if err != nil || uint64(len(fb)-k) < flen {
				t.Fatalf("filter record %d: len %d, err %v", height, flen, err)
			}
			filter := fb[k : k+int(flen)]
			fb = fb[k+int(flen):]
			prevFH = headers.FilterHeader(filter, prevFH)
			if !bytes.Equal(prevFH[:], fhb[i*32:(i+1)*32]) {
				t.Fatalf("filter header %d: recomputed %s, served %x", height, prevFH, fhb[i*32:(i+1)*32])
			}
			height++
		}
		if len(fb) != 0 {
			t.Fatalf("filters/%d.bin: %d trailing bytes", start, len(fb))
		}
	}
	if height != bulkTip+1 || prevHash.String() != idx.TipHash || prevFH.String() != idx.TipFilterHeader {
		t.Fatalf("verified %d blocks to %s/%s; index says %s/%s", height, prevHash, prevFH, idx.TipHash, idx.TipFilterHeader)
	}
}

// TestBulkCaching pins the cache contract: final ranges get a strong ETag
// and an immutable year, stable across requests and across new blocks;
// near-tip ranges get a weak ETag and a short max-age and change with the
// tip; If-None-Match answers 304 without reading the range.
func TestBulkCaching(t *testing.T) {
	chain := synthChain(t, bulkTip+1, 2)
	v := synthView(t, chain[:bulkTip+1])
	h := newTestServer(t, v, Config{}).Handler()

	tests := []struct {
		url   string
		final bool
	}{
		{"/bulk/headers/0-1999.bin", true},
		{"/bulk/filterheaders/2000-3999.bin", true},
		{"/bulk/filters/2000.bin", true},
		{"/bulk/headers/4000-4177.bin", true}, // 4177 + 144 = 4321
		{"/bulk/headers/4000-4178.bin", false},
		{"/bulk/filterheaders/4000-4321.bin", false},
		{"/bulk/filters/4000.bin", false},
		{"/bulk/neutrino/blockheaders.bin", false},
		{"/bulk/neutrino/filterheaders/0-4000.bin", true},
	}
	etags := map[string]string{}
	for _, tc := range tests {
		r1 := do(t, h, "GET", tc.url, nil)
		r2 := do(t, h, "GET", tc.url, nil)
		b1, b2 := body(t, r1), body(t, r2)
		et := r1.Header.Get("ETag")
		if r1.StatusCode != 200 || et == "" || et != r2.Header.Get("ETag") || !bytes.Equal(b1, b2) {
			t.Fatalf("%s: status %d, ETags %q %q", tc.url, r1.StatusCode, et, r2.Header.Get("ETag"))
		}
		cc := r1.Header.Get("Cache-Control")
		if tc.final {
			if strings.HasPrefix(et, "W/") || cc != "public, max-age=31536000, immutable" {
				t.Errorf("%s: final range got ETag %s, Cache-Control %q", tc.url, et, cc)
			}
		} else if !strings.HasPrefix(et, `W/"`) || cc != "public, max-age=30" {
			t.Errorf("%s: near-tip range got ETag %s, Cache-Control %q", tc.url, et, cc)
		}
		before := v.rangeReads.Load()
		r3 := do(t, h, "GET", tc.url, http.Header{"If-None-Match": {`"other", ` + et}})
		reads := v.rangeReads.Load() - before
		if r3.StatusCode != http.StatusNotModified || len(body(t, r3)) != 0 || r3.Header.Get("ETag") != et {
			t.Errorf("%s: If-None-Match gave %d", tc.url, r3.StatusCode)
		}
		if reads > 1 {
			t.Errorf("%s: 304 made %d range reads, want at most the one for the ETag", tc.url, reads)
		}
		etags[tc.url] = et
	}

	// One more block: final ETags stay, the tip-dependent files change.
	v.commit(chain[bulkTip+1])
	for _, tc := range tests {
		et := do(t, h, "GET", tc.url, nil).Header.Get("ETag")
		changes := tc.url == "/bulk/filters/4000.bin" || tc.url == "/bulk/neutrino/blockheaders.bin"
		if tc.url == "/bulk/headers/4000-4178.bin" {
			// Same bytes, and now 144 blocks deep: the weak tag turns strong.
			if et != strings.TrimPrefix(etags[tc.url], "W/") {
				t.Errorf("%s did not become final: %s", tc.url, et)
			}
			continue
		}
		if (et != etags[tc.url]) != changes {
			t.Errorf("%s after a new block: ETag %s, before %s", tc.url, et, etags[tc.url])
		}
	}
}

// TestBulkBadRequests checks the range rules and their status codes.
func TestBulkBadRequests(t *testing.T) {
	h := newTestServer(t, synthView(t, synthChain(t, bulkTip, 3)), Config{}).Handler()
	tests := []struct {
		method, url string
		status      int
	}{
		{"GET", "/bulk/headers/1-2000.bin", 400},
		{"GET", "/bulk/headers/0-2000.bin", 400},
		{"GET", "/bulk/headers/10-5.bin", 400},
		{"GET", "/bulk/headers/00-5.bin", 400},
		{"GET", "/bulk/headers/0-+5.bin", 400},
		{"GET", "/bulk/headers/0.bin", 400},
		{"GET", "/bulk/headers/0-99999999999.bin", 400},
		{"GET", "/bulk/headers/4000-5999.bin", 404},
		{"GET", "/bulk/filterheaders/6000-6001.bin", 404},
		{"GET", "/bulk/filters/1.bin", 400},
		{"GET", "/bulk/filters/6000.bin", 404},
		{"GET", "/bulk/filters/0.hex", 404},
		{"GET", "/bulk/neutrino/blockheaders/5-4322.bin", 404},
		{"GET", "/bulk/neutrino/blockheaders/5-4.bin", 400},
		{"GET", "/bulk/nothing.bin", 404},
		{"GET", "/nothing", 404},
		{"POST", "/bulk/headers/0-1999.bin", 405},
		{"HEAD", "/bulk/headers/0-1999.bin", 200},
		{"GET", "/bulk/neutrino/blockheaders/5-4321.bin", 200},
	}
	for _, tc := range tests {
		resp := do(t, h, tc.method, tc.url, nil)
		if resp.StatusCode != tc.status {
			t.Errorf("%s %s: %d %q, want %d", tc.method, tc.url, resp.StatusCode, body(t, resp), tc.status)
		}
	}
	resp := do(t, h, "HEAD", "/bulk/filterheaders/0-1999.bin", nil)
	if resp.Header.Get("Content-Length") != "64000" || len(body(t, resp)) != 0 {
		t.Errorf("HEAD: Content-Length %q", resp.Header.Get("Content-Length"))
	}
	// With every bulk slot taken, the next download is refused with 503.
	busy := newTestServer(t, synthView(t, synthChain(t, 10, 3)), Config{MaxBulkInFlight: 1})
	release, _ := busy.bulkSlots.acquire(clientKeyOf("198.51.100.7:1"), func() {}) // another client
	if resp := do(t, busy.Handler(), "GET", "/bulk/headers/0-10.bin", nil); resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("bulk download beyond the limit: %d", resp.StatusCode)
	}
	release()
	if resp := do(t, busy.Handler(), "GET", "/bulk/headers/0-10.bin", nil); resp.StatusCode != 200 {
		t.Errorf("bulk download after the slot freed: %d", resp.StatusCode)
	}
	empty := newTestServer(t, newFakeView(), Config{}).Handler()
	if resp := do(t, empty, "GET", "/bulk/headers/0-0.bin", nil); resp.StatusCode != 404 {
		t.Errorf("empty index: %d", resp.StatusCode)
	}
}

// reorgingView reorgs its fake view once, right after the snapshot that
// read the first chunk of a download, to prove a download that races a
// reorg is cut off.
type reorgingView struct {
	*fakeView
	fork   func()
	forked bool
}

func (r *reorgingView) Read(fn func(ChainReader) error) error {
	err := r.fakeView.Read(fn)
	if !r.forked {
		r.forked = true
		r.fork()
	}
	return err
}

// TestBulkDownloadCutOnReorg: a filters file whose range is reorganised
// while it streams must not complete; the client sees a broken body.
func TestBulkDownloadCutOnReorg(t *testing.T) {
	chain := synthChain(t, 1000, 4)
	fork := extendChain(t, chain[:501], 600, 5)
	fv := synthView(t, chain)
	rv := &reorgingView{fakeView: fv}
	rv.fork = func() {
		fv.rollback(500)
		fv.commit(fork[501:]...)
	}
	srv := httptest.NewServer(newTestServer(t, rv, Config{}).Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/bulk/filters/0.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Fatal("download that raced a reorg completed")
	}
	// The next download is consistent with the new chain.
	b, err := srv.Client().Get(srv.URL + "/bulk/filters/0.bin")
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(b.Body)
	b.Body.Close()
	if err != nil || b.StatusCode != 200 || len(data) == 0 {
		t.Fatalf("second download: %d, %v", b.StatusCode, err)
	}
}
