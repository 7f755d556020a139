package httpapi

import (
	"strconv"
	"testing"
)

// TestRouteCodes: one well-formed request per route is answered with the
// code RouteCodes gives that route, and reported under its label; every
// route is covered.
func TestRouteCodes(t *testing.T) {
	chain := synthChain(t, 2010, 7)
	s := newTestServer(t, synthView(t, chain), Config{SilentPayments: newFakeSP(chain, 1, 5), ReorgSafetyDepth: 6, NetName: "regtest"})
	h := s.Handler()
	hash := chain[5].Hash.String()
	requests := map[string]string{
		"other":                       "/nothing/here",
		"rest_unknown":                "/rest/chaininfo.json",
		"rest_blockfilter":            "/rest/blockfilter/basic/" + hash + ".bin",
		"rest_blockfilterheaders":     "/rest/blockfilterheaders/basic/" + hash + ".bin",
		"rest_headers":                "/rest/headers/" + hash + ".bin",
		"rest_blockhashbyheight":      "/rest/blockhashbyheight/1.hex",
		"bulk_index":                  "/bulk/index.json",
		"bulk_headers":                "/bulk/headers/0-99.bin",
		"bulk_filterheaders":          "/bulk/filterheaders/0-99.bin",
		"bulk_filters":                "/bulk/filters/0.bin",
		"bulk_neutrino_blockheaders":  "/bulk/neutrino/blockheaders.bin",
		"bulk_neutrino_filterheaders": "/bulk/neutrino/filterheaders/0-99.bin",
		"bulk_bad_request":            "/bulk/filters/1.bin",
		"metrics":                     "/metrics",
		"healthz":                     "/healthz",
		"readyz":                      "/readyz",
		"status":                      "/status",
		"sp_tweaks":                   "/sp/tweaks/600/0",
		"sp_files":                    "/sp/headers/0",
		"sp_checkpoints":              "/sp/checkpoints",
		"blindbit":                    "/blindbit/tweaks/5?dustLimit=1000",
		"range_headers":               "/headers/0",
		"range_filterheaders":         "/filter-headers/0",
		"range_filters":               "/filters/0",
		"range_import":                "/filter-headers/import/latest",
		"manifest":                    "/manifest.json",
		"latest":                      "/latest",
	}
	s.testMetrics().NodeTip(120, chain[120].Header.Timestamp)
	s.testMetrics().NodeReachable(nil)
	codes := RouteCodes()
	if len(codes) != len(requests) {
		t.Fatalf("%d routes, %d requests", len(codes), len(requests))
	}
	for r, code := range codes {
		path, ok := requests[r]
		if !ok {
			t.Errorf("no request for route %s", r)
			continue
		}
		resp := do(t, h, "GET", path, nil)
		body(t, resp)
		if resp.StatusCode != code {
			t.Errorf("%s (%s): %d, RouteCodes says %d", path, r, resp.StatusCode, code)
		}
		if n := s.testMetrics().value("cfindexd_http_requests_total", "route", r, "code", strconv.Itoa(code)); n != 1 {
			t.Errorf("%s counted %v times under route %s code %d", path, n, r, code)
		}
	}
}
