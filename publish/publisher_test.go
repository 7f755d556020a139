package publish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/internal/miniotest"
	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/objstore"
	"github.com/cfindexd/cfindexd/rangefile"
)

// memChain is an in-memory chain: linked headers, random filters and
// their filter-header chain. It implements Source and rangefile.Reader.
type memChain struct {
	mu      sync.Mutex
	hdrs    []wire.BlockHeader
	filters [][]byte
	fhs     []chainhash.Hash
	changed chan struct{}
}

func newMemChain(n int, seed uint64) *memChain {
	c := &memChain{changed: make(chan struct{})}
	c.extend(n, seed)
	return c
}

// extend appends n blocks and announces the new tip.
func (c *memChain) extend(n int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	c.mu.Lock()
	defer c.mu.Unlock()
	for range n {
		var prev, fhPrev chainhash.Hash
		if k := len(c.hdrs); k > 0 {
			prev, fhPrev = c.hdrs[k-1].BlockHash(), c.fhs[k-1]
		}
		h := wire.BlockHeader{Version: 1, PrevBlock: prev, Timestamp: time.Unix(int64(1e9+len(c.hdrs)), 0), Nonce: rng.Uint32()}
		f := make([]byte, 1+rng.IntN(64))
		for i := range f {
			f[i] = byte(rng.Uint32())
		}
		c.hdrs = append(c.hdrs, h)
		c.filters = append(c.filters, f)
		c.fhs = append(c.fhs, headers.FilterHeader(f, fhPrev))
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *memChain) TipHeight() (uint32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return uint32(len(c.hdrs) - 1), len(c.hdrs) > 0
}

func (c *memChain) TipChanged() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

func (c *memChain) Read(fn func(rangefile.Reader) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fn(c)
}

var errMissing = errors.New("no such height")

func (c *memChain) check(start, end uint32) error {
	if end < start || int(end) >= len(c.hdrs) {
		return errMissing
	}
	return nil
}

func (c *memChain) HashAt(h uint32) (chainhash.Hash, error) {
	if err := c.check(h, h); err != nil {
		return chainhash.Hash{}, err
	}
	return c.hdrs[h].BlockHash(), nil
}

func (c *memChain) Headers(start, end uint32) ([]wire.BlockHeader, error) {
	if err := c.check(start, end); err != nil {
		return nil, err
	}
	return append([]wire.BlockHeader(nil), c.hdrs[start:end+1]...), nil
}

func (c *memChain) FilterHeadersByHeight(start, end uint32) ([]chainhash.Hash, error) {
	if err := c.check(start, end); err != nil {
		return nil, err
	}
	return append([]chainhash.Hash(nil), c.fhs[start:end+1]...), nil
}

func (c *memChain) Filters(start, end uint32) ([][]byte, error) {
	if err := c.check(start, end); err != nil {
		return nil, err
	}
	return append([][]byte(nil), c.filters[start:end+1]...), nil
}

// countObs counts what the publisher reports.
type countObs struct {
	mu                     sync.Mutex
	uploaded, kept, failed int
	bytes                  int
	height                 uint32
}

func (o *countObs) PublishUploaded(n int) { o.mu.Lock(); o.uploaded++; o.bytes += n; o.mu.Unlock() }
func (o *countObs) PublishKept()          { o.mu.Lock(); o.kept++; o.mu.Unlock() }
func (o *countObs) PublishedHeight(e uint32) {
	o.mu.Lock()
	o.height = e
	o.mu.Unlock()
}
func (o *countObs) PublishFailed() { o.mu.Lock(); o.failed++; o.mu.Unlock() }

// testNet is the network of the test chains.
func testNet(c *memChain) rangefile.Network {
	return rangefile.Network{Name: "regtest", Net: wire.TestNet, Genesis: c.hdrs[0].BlockHash()}
}

// testBucket starts MinIO with one bucket and opens it under a prefix.
func testBucket(t *testing.T) *objstore.Bucket {
	srv := miniotest.Start(t)
	srv.CreateBucket(t, "cfidx", false)
	b, err := objstore.Open(objstore.Config{Endpoint: srv.Endpoint, Bucket: "cfidx", Prefix: "regtest", Insecure: true,
		AccessKey: miniotest.AccessKey, SecretKey: miniotest.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkBucket fails t unless the bucket holds every object of the ranges
// final in c, byte for byte as rangefile builds them, and a manifest and
// latest that list them.
func checkBucket(t *testing.T, ctx context.Context, b *objstore.Bucket, c *memChain, depth uint32) {
	t.Helper()
	tip, _ := c.TipHeight()
	n := rangefile.FinalCount(tip, depth)
	mb, err := b.Get(ctx, rangefile.ManifestName, rangefile.MaxManifestSize)
	if err != nil {
		t.Fatal(err)
	}
	m, err := rangefile.ParseManifest(mb)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Ranges) != int(n) || m.Network != "regtest" {
		t.Fatalf("manifest lists %d ranges of %s, want %d", len(m.Ranges), m.Network, n)
	}
	for i := range n {
		var rg rangefile.Range
		if err := c.Read(func(r rangefile.Reader) error {
			rg, err = rangefile.Build(r, nil, wire.TestNet, i*rangefile.Size)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if m.Ranges[i].EndFilterHeader != c.fhs[rg.End].String() || m.Ranges[i].EndBlockHash != c.hdrs[rg.End].BlockHash().String() {
			t.Errorf("range %d: ends %s %s", rg.Start, m.Ranges[i].EndBlockHash, m.Ranges[i].EndFilterHeader)
		}
		for _, o := range rg.Objects {
			got, err := b.Get(ctx, o.Name, 64<<20)
			if err != nil || string(got) != string(o.Data) {
				t.Fatalf("%s: %d bytes, want %d (%v)", o.Name, len(got), len(o.Data), err)
			}
			if m.Ranges[i].Objects[o.Name] != hex.EncodeToString(o.SHA256[:]) {
				t.Errorf("%s: manifest hash %s", o.Name, m.Ranges[i].Objects[o.Name])
			}
		}
	}
	lb, err := b.Get(ctx, rangefile.LatestName, 4096)
	if err != nil {
		t.Fatal(err)
	}
	l, err := rangefile.ParseLatest(lb)
	ms := sha256.Sum256(mb)
	if err != nil || l.End != rangefile.End((n-1)*rangefile.Size) || l.ManifestSHA256 != hex.EncodeToString(ms[:]) {
		t.Errorf("latest %+v %v", l, err)
	}
	for name, imp := range m.Imports {
		got, err := b.Get(ctx, name, 64<<20)
		s := sha256.Sum256(got)
		if err != nil || hex.EncodeToString(s[:]) != imp.SHA256 {
			t.Errorf("import %s: %v", name, err)
		}
	}
}

// TestPublishResumeAndGrow: a round publishes every final range; a second
// publisher over the same bucket puts nothing; a longer chain adds only
// the new range's objects and the mutable ones.
func TestPublishResumeAndGrow(t *testing.T) {
	const depth = 6
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(120*time.Second))
	defer cancel()
	b := testBucket(t)
	c := newMemChain(6010, 1)
	cfg := Config{Network: testNet(c), ReorgSafetyDepth: depth}
	obs := &countObs{}
	if err := New(cfg, c, b, obs, zerolog.Nop()).Round(ctx); err != nil {
		t.Fatal(err)
	}
	checkBucket(t, ctx, b, c, depth)
	if obs.uploaded != 3*3+4 || obs.height != 5999 {
		t.Errorf("first round: %d uploaded, height %d", obs.uploaded, obs.height)
	}
	again := &countObs{}
	if err := New(cfg, c, b, again, zerolog.Nop()).Round(ctx); err != nil {
		t.Fatal(err)
	}
	if again.uploaded != 0 || again.kept != 4 {
		t.Errorf("resumed round: %d uploaded, %d kept", again.uploaded, again.kept)
	}
	c.extend(2000, 2)
	grown := &countObs{}
	if err := New(cfg, c, b, grown, zerolog.Nop()).Round(ctx); err != nil {
		t.Fatal(err)
	}
	if grown.uploaded != 3+4 {
		t.Errorf("grown round: %d uploaded", grown.uploaded)
	}
	checkBucket(t, ctx, b, c, depth)
}

// TestPublishRefusesConflicts: an immutable object in place with other
// bytes, or a manifest of another chain, stops the publisher with
// ErrConflict naming it, and nothing is overwritten.
func TestPublishRefusesConflicts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(120*time.Second))
	defer cancel()
	b := testBucket(t)
	c := newMemChain(4010, 3)
	cfg := Config{Network: testNet(c), ReorgSafetyDepth: 6}
	other := []byte("not these filters")
	if err := b.Put(ctx, "filters/2000", other, sha256.Sum256(other), "x", "y"); err != nil {
		t.Fatal(err)
	}
	err := New(cfg, c, b, &countObs{}, zerolog.Nop()).Round(ctx)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "filters/2000") {
		t.Fatalf("round over a foreign object: %v", err)
	}
	if got, _ := b.Get(ctx, "filters/2000", 1024); string(got) != string(other) {
		t.Error("the foreign object was overwritten")
	}
	// A bucket published from another chain of the same network.
	b2 := testBucket(t)
	fork := newMemChain(4010, 4)
	fork.hdrs[0] = c.hdrs[0] // same genesis, different blocks
	if err := New(Config{Network: testNet(c), ReorgSafetyDepth: 6}, fork, b2, &countObs{}, zerolog.Nop()).Round(ctx); err != nil {
		t.Fatal(err)
	}
	err = New(cfg, c, b2, &countObs{}, zerolog.Nop()).Round(ctx)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), rangefile.ManifestName) {
		t.Fatalf("round over another chain's manifest: %v", err)
	}
}
