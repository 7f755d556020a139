package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/tcptest"
)

// get fetches url and returns status, headers and body.
func get(t *testing.T, url string, hdr map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, body
}

// coreBlockFilter is Core's serialized BlockFilter: type byte, block hash in
// internal order, CompactSize length, filter.
func coreBlockFilter(hash chainhash.Hash, filter []byte) []byte {
	var b bytes.Buffer
	b.WriteByte(0)
	b.Write(hash[:])
	_ = wire.WriteVarBytes(&b, 0, filter)
	return b.Bytes()
}

// scrape parses /metrics with the Prometheus text parser.
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	status, _, body := get(t, base+"/metrics", nil)
	if status != 200 {
		t.Fatalf("/metrics: %d", status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	out := map[string]float64{}
	for name, fam := range families {
		var sum float64
		for _, m := range fam.GetMetric() {
			switch {
			case m.Counter != nil:
				sum += m.GetCounter().GetValue()
			case m.Gauge != nil:
				sum += m.GetGauge().GetValue()
			}
		}
		out[name] = sum
	}
	return out
}

// TestHTTPAgainstRunningDaemon runs the daemon over a btcd chain and checks
// its HTTP surface: Core-compatible blockfilter and blockfilterheaders bytes
// in every format against btcd's own filters, Core's error codes, bulk
// files that verify against the filter-header chain with stable ETags, and
// metrics that parse and move when blocks are indexed.
func TestHTTPAgainstRunningDaemon(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{TxIndex: true, WalletSeed: 61})
	if err := btcdtest.BuildTxRichChain(ctx, node, node.Wallet(), 300); err != nil {
		t.Fatal(err)
	}
	_, tipHeight, err := node.BestBlock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	httpAddr := tcptest.FreeAddr(t)
	base := "http://" + httpAddr
	d := startDaemon(t, append(nodeArgs(node, "regtest", t.TempDir()), "--httplisten="+httpAddr, "--reorgsafetydepth=6")...)
	d.waitLog(60*time.Second, heightAtLeast(float64(tipHeight)))
	waitHTTP(t, base+"/readyz", 200, "")
	before := scrape(t, base)

	t.Run("blockfilter matches btcd in bin, hex and json", func(t *testing.T) {
		for _, h := range []int32{0, 1, 150, tipHeight} {
			hash, err := node.BlockHash(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			filter, _, err := node.FilterOf(ctx, hash)
			if err != nil {
				t.Fatal(err)
			}
			want := coreBlockFilter(hash, filter)
			url := fmt.Sprintf("%s/rest/blockfilter/basic/%s", base, hash)
			if st, _, body := get(t, url+".bin", nil); st != 200 || !bytes.Equal(body, want) {
				t.Errorf("h%d .bin: %d %x, want %x", h, st, body, want)
			}
			if st, _, body := get(t, url+".hex", nil); st != 200 || string(body) != hex.EncodeToString(want)+"\n" {
				t.Errorf("h%d .hex: %d %q", h, st, body)
			}
			st, _, body := get(t, url+".json", nil)
			var js struct{ Filter string }
			if st != 200 || json.Unmarshal(body, &js) != nil || js.Filter != hex.EncodeToString(filter) {
				t.Errorf("h%d .json: %d %q", h, st, body)
			}
		}
	})

	t.Run("blockfilterheaders matches btcd", func(t *testing.T) {
		start, err := node.BlockHash(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		st, _, body := get(t, fmt.Sprintf("%s/rest/blockfilterheaders/basic/%s.bin?count=2000", base, start), nil)
		if st != 200 || len(body) != 32*int(tipHeight-100+1) {
			t.Fatalf("count=2000 from h100: %d, %d bytes", st, len(body))
		}
		for i := 0; i < len(body)/32; i += 37 {
			hash, err := node.BlockHash(ctx, 100+int32(i))
			if err != nil {
				t.Fatal(err)
			}
			_, want, err := node.FilterOf(ctx, hash)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(body[32*i:32*i+32], want[:]) {
				t.Fatalf("filter header at h%d differs from btcd", 100+i)
			}
		}
		st, _, body = get(t, fmt.Sprintf("%s/rest/blockfilterheaders/basic/%s.json", base, start), nil)
		var list []string
		if st != 200 || json.Unmarshal(body, &list) != nil || len(list) != 5 {
			t.Errorf("default count: %d %q", st, body)
		}
	})

	t.Run("Core's error codes", func(t *testing.T) {
		tip, err := node.BlockHash(ctx, tipHeight)
		if err != nil {
			t.Fatal(err)
		}
		unknown := strings.Repeat("ab", 32)
		for _, tc := range []struct {
			path   string
			status int
			body   string
		}{
			{"/rest/blockfilter/basic/nothex.bin", 400, "Invalid hash: nothex\r\n"},
			{"/rest/blockfilter/basic/" + unknown + ".bin", 404, unknown + " not found\r\n"},
			{"/rest/blockfilter/extended/" + tip.String() + ".bin", 400, "Unknown filtertype extended\r\n"},
			{"/rest/blockfilterheaders/basic/" + tip.String() + ".bin?count=2001", 400, "Header count is invalid or out of acceptable range (1-2000): 2001\r\n"},
			{"/rest/blockfilterheaders/basic/" + tip.String() + ".bin?count=0", 400, "Header count is invalid or out of acceptable range (1-2000): 0\r\n"},
			{"/rest/blockfilter/basic/" + tip.String(), 404, "output format not found (available: .bin, .hex, .json)\r\n"},
		} {
			st, _, body := get(t, base+tc.path, nil)
			if st != tc.status || string(body) != tc.body {
				t.Errorf("GET %s: %d %q, want %d %q", tc.path, st, body, tc.status, tc.body)
			}
		}
	})

	t.Run("bulk files verify against the filter-header chain", func(t *testing.T) {
		end := tipHeight
		st, hdr, fhBody := get(t, fmt.Sprintf("%s/bulk/filterheaders/0-%d.bin", base, end), nil)
		if st != 200 || len(fhBody) != 32*int(end+1) {
			t.Fatalf("filterheaders: %d, %d bytes", st, len(fhBody))
		}
		etag := hdr.Get("ETag")
		st, _, filters := get(t, base+"/bulk/filters/0.bin", nil)
		if st != 200 {
			t.Fatalf("filters: %d", st)
		}
		r := bytes.NewReader(filters)
		var prev chainhash.Hash
		for h := 0; r.Len() > 0; h++ {
			f, err := wire.ReadVarBytes(r, 0, 1<<20, "filter")
			if err != nil {
				t.Fatalf("filter %d: %v", h, err)
			}
			prev = headers.FilterHeader(f, prev)
			if !bytes.Equal(prev[:], fhBody[32*h:32*h+32]) {
				t.Fatalf("filter %d does not chain to the served filter header", h)
			}
		}
		_, want, err := node.FilterOf(ctx, mustHash(t, node, tipHeight))
		if err != nil {
			t.Fatal(err)
		}
		if prev != want {
			t.Fatalf("chained header at tip %s, btcd %s", prev, want)
		}
		st, hdr2, _ := get(t, fmt.Sprintf("%s/bulk/filterheaders/0-%d.bin", base, end), nil)
		if st != 200 || hdr2.Get("ETag") != etag || etag == "" {
			t.Errorf("ETag not stable: %q then %q", etag, hdr2.Get("ETag"))
		}
		if st, _, _ := get(t, fmt.Sprintf("%s/bulk/filterheaders/0-%d.bin", base, end), map[string]string{"If-None-Match": etag}); st != http.StatusNotModified {
			t.Errorf("If-None-Match: %d, want 304", st)
		}
		// A range deep enough is final: strong ETag, immutable.
		_, deep, _ := get(t, fmt.Sprintf("%s/bulk/headers/0-%d.bin", base, end-10), nil)
		if cc := deep.Get("Cache-Control"); !strings.Contains(cc, "immutable") || strings.HasPrefix(deep.Get("ETag"), "W/") {
			t.Errorf("deep range: Cache-Control %q ETag %q", cc, deep.Get("ETag"))
		}
	})

	t.Run("metrics move when blocks are indexed", func(t *testing.T) {
		hashes, err := node.Generate(ctx, 3)
		if err != nil {
			t.Fatal(err)
		}
		d.waitLog(10*time.Second, func(m map[string]any) bool {
			return m["message"] == "indexed block" && m["hash"] == hashes[2].String()
		})
		after := scrape(t, base)
		for _, name := range []string{"cfindexd_blocks_indexed_total", "cfindexd_indexed_height", "cfindexd_filter_bytes_total", "cfindexd_http_requests_total"} {
			if after[name] <= before[name] {
				t.Errorf("%s did not move: %v -> %v", name, before[name], after[name])
			}
		}
		if after["cfindexd_indexed_height"] != float64(tipHeight+3) || after["cfindexd_node_height"] != float64(tipHeight+3) {
			t.Errorf("indexed/node height %v/%v, want %d", after["cfindexd_indexed_height"], after["cfindexd_node_height"], tipHeight+3)
		}
		// btcd's txindex mode: the cache resolved the spends of the
		// tx-rich chain.
		if after["cfindexd_prevouts_resolved_total"] <= 0 {
			t.Errorf("prevouts resolved %v", after["cfindexd_prevouts_resolved_total"])
		}
		if after["cfindexd_store_size_bytes"] <= 0 {
			t.Errorf("store size %v", after["cfindexd_store_size_bytes"])
		}
	})
	if code, _ := d.terminate(10 * time.Second); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
}

func mustHash(t *testing.T, n *btcdtest.Node, h int32) chainhash.Hash {
	t.Helper()
	hash, err := n.BlockHash(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	return hash
}
