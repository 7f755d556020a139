package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/replica/source"
)

// warmTip gives 20 final ranges: more than a request hashes inline.
const warmTip = 40_010

// warmServer serves a synthetic regtest chain to tip with the catalog's
// warm pace set.
func warmServer(tb testing.TB, tip int, pace time.Duration) *Server {
	tb.Helper()
	chain := synthChain(tb, tip, 11)
	return newTestServer(tb, synthView(tb, chain), Config{Net: wire.TestNet, ReorgSafetyDepth: layoutDepth, NetName: "regtest",
		Genesis: *chaincfg.RegressionNetParams.GenesisHash, SilentPayments: newFakeSP(chain, 1, 9),
		CatalogWarmPace: pace, CatalogWarmPoll: time.Hour})
}

// TestCatalogWarmedAtStart: WarmCatalog hashes the final ranges and the
// import files in the background, then /manifest.json and /latest are
// answered without hashing anything; the documents are those a cold
// server computes.
func TestCatalogWarmedAtStart(t *testing.T) {
	s := warmServer(t, layoutTip, time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.WarmCatalog(ctx) }()
	defer func() { cancel(); <-done }()
	testtime.WaitFor(t, "the catalog warm", testtime.Scale(30*time.Second), func() bool {
		st := s.catalog.Stats()
		return st.RangesHashed == 2 && st.ImportRunsHashed == 4
	})
	before := s.catalog.Stats()
	m, _ := get(t, s, "/manifest.json", 200)
	l, _ := get(t, s, "/latest", 200)
	if after := s.catalog.Stats(); after != before {
		t.Errorf("the manifest was computed again after the warm: %+v, then %+v", before, after)
	}
	cold := warmServer(t, layoutTip, time.Millisecond)
	cm, _ := get(t, cold, "/manifest.json", 200)
	cl, _ := get(t, cold, "/latest", 200)
	if string(m) != string(cm) || string(l) != string(cl) {
		t.Errorf("warm documents differ from a cold server's:\n%s\n%s", m, cm)
	}
}

// TestCatalogWarmingAnswers503: while the warmer has more left than a
// request may hash, /manifest.json is 503 with Retry-After; WarmCatalog
// returns when its context ends, and the server then answers as before
// (computing inline).
func TestCatalogWarmingAnswers503(t *testing.T) {
	s := warmServer(t, warmTip, time.Hour) // one range, then a wait of an hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.WarmCatalog(ctx) }()
	testtime.WaitFor(t, "one range hashed", testtime.Scale(30*time.Second), func() bool {
		return s.catalog.Stats().RangesHashed == 1
	})
	resp := do(t, s.Handler(), "GET", "/manifest.json", nil)
	b := body(t, resp)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("manifest while warming: %d %q, Retry-After %q", resp.StatusCode, b, resp.Header.Get("Retry-After"))
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("WarmCatalog: %v", err)
		}
	case <-time.After(testtime.Scale(10 * time.Second)):
		t.Fatal("WarmCatalog did not return when its context ended")
	}
	get(t, s, "/manifest.json", 200)
}

// TestReplicaSourceWaitsForWarmCatalog: a replica's source client
// (replica/source) pointed at a server whose catalog is warming is
// answered 503 with Retry-After, waits as asked, and reads latest and the
// manifest once the catalog is warm.
func TestReplicaSourceWaitsForWarmCatalog(t *testing.T) {
	s := warmServer(t, warmTip, 100*time.Millisecond) // about two seconds of 503s
	var busy atomic.Int32
	h := s.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &codeRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if rec.code == http.StatusServiceUnavailable && w.Header().Get("Retry-After") != "" {
			busy.Add(1)
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.WarmCatalog(ctx) }()
	defer func() { cancel(); <-done }()
	testtime.WaitFor(t, "the warm begun", testtime.Scale(30*time.Second), func() bool { return s.catalog.Stats().RangesHashed >= 1 })
	c, err := source.New(source.Config{BaseURL: srv.URL, Attempts: 2, BackoffMin: time.Millisecond, BackoffMax: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithTimeout(context.Background(), testtime.Scale(60*time.Second))
	defer scancel()
	l, m, err := c.Snapshot(sctx)
	if err != nil {
		t.Fatal(err)
	}
	if busy.Load() == 0 {
		t.Error("the source was never answered 503 with Retry-After: the test did not test the warm")
	}
	if l.End != 39_999 || len(m.Ranges) != 20 {
		t.Errorf("latest ends at %d, the manifest lists %d ranges", l.End, len(m.Ranges))
	}
}

// codeRecorder records the status code a handler writes.
type codeRecorder struct {
	http.ResponseWriter
	code int
}

func (r *codeRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}
