package replica

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/replica/layouttest"
	"github.com/cfindexd/cfindexd/replica/source"
)

// sharedChain is mined once for the package's tests: two whole ranges and
// a few heights of a third.
var sharedChain = sync.OnceValue(func() *testChain { return mineChain(2*layouttest.RangeSize + 10) })

func newSource(t testing.TB, url string) *source.Client {
	t.Helper()
	c, err := source.New(source.Config{BaseURL: url, Attempts: 2, BackoffMin: time.Millisecond, BackoffMax: 5 * time.Millisecond, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestBootstrapFromLayout: a replica fills its store from a layout served
// below a prefix, block for block the chain that was published; a second
// run commits nothing and fetches no range; a run interrupted by an
// object the source lacks keeps the checked range before it, and the next
// run resumes after it without fetching it again.
func TestBootstrapFromLayout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := sharedChain()
	layout := layouttest.Build(t, "regtest", c.hashes[0], c.ranges(t))
	missing := layout["filters/2000"]
	delete(layout, "filters/2000")
	srv := layouttest.Serve(t, layout, "/bucket/pfx")
	st := openStore(t, t.TempDir())
	defer st.Close()
	cfg := BootstrapConfig{Source: newSource(t, srv.URL+"/bucket/pfx/"), Store: st, Network: regtest(t), Log: zerolog.Nop()}

	_, err := Bootstrap(ctx, cfg)
	if !errors.Is(err, source.ErrNotFound) || !strings.HasPrefix(err.Error(), "filters/2000: ") {
		t.Fatalf("bootstrap with filters/2000 missing: %v", err)
	}
	checkStoreHolds(t, st, c, 1999)

	srv.Set("filters/2000", missing)
	res, err := Bootstrap(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Committed != 2000 || res.Ranges != 1 || res.Published.End != 3999 {
		t.Fatalf("resumed bootstrap: %+v", res)
	}
	checkStoreHolds(t, st, c, 3999)
	if n := srv.Requests("filters/0"); n != 1 {
		t.Fatalf("filters/0 fetched %d times, want once", n)
	}
	res, err = Bootstrap(ctx, cfg)
	if err != nil || res.Committed != 0 || srv.Requests("headers/2000") != 2 {
		t.Fatalf("third bootstrap: %+v, %v; headers/2000 fetched %d times", res, err, srv.Requests("headers/2000"))
	}
}

// TestBootstrapRefusesDamage: one flipped byte anywhere in the layout (an
// object, the manifest), or damaged bytes a publisher hashed into the
// manifest, stops the bootstrap with an error naming the object, and the
// store keeps nothing of the damaged range.
func TestBootstrapRefusesDamage(t *testing.T) {
	c := sharedChain()
	ranges := c.ranges(t)
	tests := []struct {
		name    string
		damage  func(t *testing.T, l layouttest.Layout)
		wantErr []string
		wantIs  error
		tip     int64 // -1: empty store
	}{
		{"a filter byte", func(t *testing.T, l layouttest.Layout) {
			l["filters/2000"] = layouttest.Flip(l["filters/2000"], 5000)
		}, []string{"filters/2000: sha256 mismatch"}, source.ErrHashMismatch, 1999},
		{"a header byte", func(t *testing.T, l layouttest.Layout) {
			l["headers/0"] = layouttest.Flip(l["headers/0"], 80*700+4)
		}, []string{"headers/0: sha256 mismatch"}, source.ErrHashMismatch, -1},
		{"a filter-header byte", func(t *testing.T, l layouttest.Layout) {
			l["filter-headers/2000"] = layouttest.Flip(l["filter-headers/2000"], 32*1999)
		}, []string{"filter-headers/2000: sha256 mismatch"}, source.ErrHashMismatch, 1999},
		{"a manifest byte", func(t *testing.T, l layouttest.Layout) {
			m := l["manifest.json"]
			l["manifest.json"] = layouttest.Flip(m, strings.Index(string(m), `"filters/2000":"`)+20)
		}, []string{"manifest.json: sha256 mismatch"}, source.ErrHashMismatch, -1},
		{"a filter byte the publisher hashed", func(t *testing.T, l layouttest.Layout) {
			f := l["filters/2000"]
			l.Republish(t, "filters/2000", layouttest.Flip(f, len(f)-3))
		}, []string{"filters/2000 and filter-headers/2000: ", "height 3999: the filter chains to filter header"}, ErrInvalidChain, 1999},
		{"a header byte the publisher hashed (merkle root)", func(t *testing.T, l layouttest.Layout) {
			l.Republish(t, "headers/2000", layouttest.Flip(l["headers/2000"], 80*10+36+1))
		}, []string{"headers/2000: ", "height 201"}, ErrInvalidChain, 1999},
		{"a header's bits the publisher hashed", func(t *testing.T, l layouttest.Layout) {
			l.Republish(t, "headers/0", layouttest.Flip(l["headers/0"], 80*1+72))
		}, []string{"headers/0: ", "height 1"}, ErrInvalidChain, -1},
		{"the network", func(t *testing.T, l layouttest.Layout) {
			clear(l)
			for name, b := range layouttest.Build(t, "simnet", c.hashes[0], ranges) {
				l[name] = b
			}
		}, []string{"manifest.json: wrong network", `"simnet"`}, ErrWrongNetwork, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			layout := layouttest.Build(t, "regtest", c.hashes[0], ranges)
			tc.damage(t, layout)
			srv := layouttest.Serve(t, layout, "")
			st := openStore(t, t.TempDir())
			defer st.Close()
			_, err := Bootstrap(ctx, BootstrapConfig{Source: newSource(t, srv.URL), Store: st, Network: regtest(t), Log: zerolog.Nop()})
			if err == nil || !errors.Is(err, tc.wantIs) {
				t.Fatalf("err %v, want %v", err, tc.wantIs)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			tip, ok := st.Tip()
			if tc.tip < 0 && ok || tc.tip >= 0 && (!ok || int64(tip.Height) != tc.tip) {
				t.Fatalf("store tip %d (%v) after the refusal, want %d", tip.Height, ok, tc.tip)
			}
		})
	}
}
