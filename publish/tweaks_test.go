package publish

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/rangefile"
)

// lagTweaks is a silent-payment index over a memChain that has indexed
// heights 1..next-1, each block with one tweak.
type lagTweaks struct {
	mu   sync.Mutex
	c    *memChain
	next uint32
}

func (x *lagTweaks) Covered() (uint32, uint32) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return 1, x.next
}

func (x *lagTweaks) BlockTweaks(start, end uint32) ([]rangefile.BlockTweaks, error) {
	out := make([]rangefile.BlockTweaks, 0, end-start+1)
	for h := start; h <= end; h++ {
		tw := rangefile.Tweak{MaxValue: uint64(h) * 100}
		tw.Point[0], tw.Point[1] = 2, byte(h)
		out = append(out, rangefile.BlockTweaks{Hash: x.c.hdrs[h].BlockHash(), Tweaks: []rangefile.Tweak{tw}})
	}
	return out, nil
}

// TestPublishTweaksArriveLater: ranges the silent-payment index does not
// cover yet are published without tweak files; once it covers them, the
// next round puts only their four tweak files (the other objects kept),
// then the manifest and latest (the import files are unchanged), and the
// manifest lists them.
func TestPublishTweaksArriveLater(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(120*time.Second))
	defer cancel()
	b := testBucket(t)
	c := newMemChain(4010, 5)
	sp := &lagTweaks{c: c, next: 2500} // covers range 0, not range 2000
	obs := &countObs{}
	p := New(Config{Network: testNet(c), ReorgSafetyDepth: 6, Tweaks: sp}, c, b, obs, zerolog.Nop())
	if err := p.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if obs.uploaded != 3+4+3+4 {
		t.Fatalf("first round: %d uploaded", obs.uploaded)
	}
	sp.mu.Lock()
	sp.next = 4011
	sp.mu.Unlock()
	if err := p.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if obs.uploaded != 14+4+2 || obs.kept != 3 {
		t.Errorf("second round: %d uploaded in all, %d kept", obs.uploaded, obs.kept)
	}
	mb, err := b.Get(ctx, rangefile.ManifestName, rangefile.MaxManifestSize)
	if err != nil {
		t.Fatal(err)
	}
	m, err := rangefile.ParseManifest(mb)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range m.Ranges {
		if len(r.Objects) != 7 {
			t.Errorf("range %d lists %d objects", r.Start, len(r.Objects))
		}
	}
	var rg rangefile.Range
	_ = c.Read(func(r rangefile.Reader) error { rg, err = rangefile.Build(r, sp, testNet(c).Net, 2000); return err })
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range rg.Objects[3:] {
		got, err := b.Get(ctx, o.Name, 1<<20)
		if err != nil || string(got) != string(o.Data) {
			t.Errorf("%s: %d bytes, want %d (%v)", o.Name, len(got), len(o.Data), err)
		}
	}
}
