package httpapi

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// FuzzParsePath drives request-target parsing and the whole handler with
// arbitrary targets: nothing panics, parsed values respect their limits,
// and every answer has a status the endpoints document. The Core REST
// targets' own invariants are corerest's FuzzParse.
func FuzzParsePath(f *testing.F) {
	for _, e := range loadIndex(f) {
		f.Add(e.URL)
	}
	for _, s := range []string{
		"/rest/blockfilterheaders/basic/5/0f06761d45f7502ccc48da2dd2e0212915b3acb3444a3e4ae96764321f50a52e.bin",
		"/rest/blockfilterheaders/basic/0f06761d45f7502ccc48da2dd2e0212915b3acb3444a3e4ae96764321f50a52e.json?count=18446744073709551617",
		"/rest/blockfilter/basic/.bin", "/rest/blockfilter//.", "/rest/blockfilterheaders/basic/x.hex?count=%zz",
		"/bulk/headers/0-1999.bin", "/bulk/filters/2000.bin", "/bulk/neutrino/blockheaders/0-10.bin",
		"/bulk/filterheaders/4294966000-4294967295.bin", "/bulk/index.json", "/metrics", "/readyz",
		"/sp/tweaks/3750/2000", "/sp/tweaks/601/0", "/sp/headers/0", "/sp/tweakdata/4294966000", "/sp/checkpoints",
		"/blindbit/tweaks/5?dustLimit=600&dustLimit=x", "/blindbit/filter/new-utxos/7", "/blindbit/tweak-index/%35?dustLimit=%zz",
		"/headers/2000", "/filter-headers/0", "/filters/4294966000", "/headers/import/latest", "/filter-headers/import/latest",
		"/manifest.json", "/latest", "/headers/import/0", "/filters/00",
	} {
		f.Add(s)
	}
	chain := synthChain(f, 30, 3)
	h := newTestServer(f, recordedView(f), Config{}).Handler()
	sp := newTestServer(f, synthView(f, chain), Config{SilentPayments: newFakeSP(chain, 1, 5), NetName: "regtest"}).Handler()
	known := map[int]bool{200: true, 304: true, 400: true, 404: true, 405: true, 414: true, 503: true}

	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.ParseRequestURI(raw)
		if err != nil {
			return
		}
		tg := parseTarget(u.EscapedPath(), u.RawQuery)
		switch tg.route {
		case routeBulkHeaders, routeBulkFilterHeaders:
			if tg.start%BulkInterval != 0 || tg.end < tg.start || tg.end-tg.start >= BulkInterval {
				t.Fatalf("accepted range %d-%d", tg.start, tg.end)
			}
		case routeBulkFilters:
			if tg.start%BulkInterval != 0 {
				t.Fatalf("accepted filters start %d", tg.start)
			}
		case routeSPTweaks, routeSPFiles:
			if tg.start%BulkInterval != 0 || (tg.route == routeSPTweaks && tg.sp.dust != 0 && tg.sp.dust != 600 && tg.sp.dust != 1000 && tg.sp.dust != 3750) {
				t.Fatalf("accepted silent-payment range %+v", tg)
			}
		case routeBlindBit:
			if tg.sp.blindBit == "" {
				t.Fatalf("blindbit target without an endpoint: %+v", tg)
			}
		case routeRangeHeaders, routeRangeFilterHeaders, routeRangeFilters:
			if tg.start%BulkInterval != 0 || tg.end != tg.start+BulkInterval-1 {
				t.Fatalf("accepted layout range %d-%d", tg.start, tg.end)
			}
		case routeNeutrinoBlockHeaders, routeNeutrinoFilterHeaders:
			if tg.ranged && tg.end < tg.start {
				t.Fatalf("accepted range %d-%d", tg.start, tg.end)
			}
		}

		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.URL, req.RequestURI = u, raw
		for _, h := range []http.Handler{h, sp} {
			rr := httptest.NewRecorder()
			h.ServeHTTP(rr, req)
			if !known[rr.Code] {
				t.Fatalf("%q answered %d", raw, rr.Code)
			}
		}
	})
}
