package publish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/objstore"
	"github.com/cfindexd/cfindexd/rangefile"
)

// ErrConflict is returned when the bucket holds a published object, or a
// manifest, that differs from what the store now gives for it: a reorg
// deeper than the reorg safety depth, or a bucket of another chain. The
// publisher stops and overwrites nothing.
var ErrConflict = errors.New("publish: the bucket differs from the store")

// Source is the chain the publisher reads.
type Source interface {
	// TipHeight returns the indexed tip's height; false on an empty index.
	TipHeight() (uint32, bool)
	// Read runs fn with a reader of one committed state.
	Read(fn func(rangefile.Reader) error) error
	// TipChanged returns a channel closed at the next tip change.
	TipChanged() <-chan struct{}
}

// Bucket is where the objects go (an *objstore.Bucket).
type Bucket interface {
	Put(ctx context.Context, name string, data []byte, sum [32]byte, cacheControl, contentType string) error
	// PutStream writes the size bytes of r, whose SHA-256 is sum,
	// without holding them; it fails, writing nothing, when r fails.
	PutStream(ctx context.Context, name string, r io.Reader, size int64, sum [32]byte, cacheControl, contentType string) error
	Stat(ctx context.Context, name string) (objstore.Info, bool, error)
	Get(ctx context.Context, name string, limit int64) ([]byte, error)
}

var _ Bucket = (*objstore.Bucket)(nil)

// Observer is told what the publisher does (package metrics).
type Observer interface {
	// PublishUploaded reports one object put, of n bytes.
	PublishUploaded(n int)
	// PublishKept reports one object found in place with its hash.
	PublishKept()
	// PublishedHeight reports the end of the newest range the bucket's
	// manifest lists.
	PublishedHeight(end uint32)
	// PublishFailed reports a round that failed (it is retried).
	PublishFailed()
}

// Config configures a Publisher.
type Config struct {
	Network          rangefile.Network
	ReorgSafetyDepth uint32
	// Tweaks is the silent-payment index; nil when it is off.
	Tweaks rangefile.TweakIndex
	// ManifestEvery is the longest a catch-up of many ranges goes without
	// writing the import files, manifest and latest; 0 means 5 minutes.
	ManifestEvery time.Duration
	// RetryAfter is the first wait after a failed round (doubling to 16
	// times that); 0 means 5 seconds.
	RetryAfter time.Duration
	// Recheck is the longest wait between two rounds without a tip
	// change (the silent-payment index may reach a range later than the
	// tip does); 0 means one minute.
	Recheck time.Duration
}

// Publisher publishes the final ranges of a store to a bucket.
type Publisher struct {
	cfg    Config
	src    Source
	bucket Bucket
	obs    Observer
	log    zerolog.Logger
	// published are the entries of the ranges in place, from 0; loaded
	// reports whether the bucket's manifest has been read.
	published []rangefile.RangeEntry
	loaded    bool
	// synced reports whether the mutable objects have been written (or
	// found in place) since the manifest was loaded.
	synced bool
	// written is what the mutable objects hold now (name to SHA-256 hex).
	written map[string]string
}

// New returns a publisher of src's final ranges to bucket.
func New(cfg Config, src Source, bucket Bucket, obs Observer, log zerolog.Logger) *Publisher {
	if cfg.ManifestEvery == 0 {
		cfg.ManifestEvery = 5 * time.Minute
	}
	if cfg.RetryAfter == 0 {
		cfg.RetryAfter = 5 * time.Second
	}
	if cfg.Recheck == 0 {
		cfg.Recheck = time.Minute
	}
	return &Publisher{cfg: cfg, src: src, bucket: bucket, obs: obs, log: log.With().Str("component", "publish").Logger(),
		written: map[string]string{}}
}

// Run publishes at start, at every tip change and at least every
// Config.Recheck until ctx ends (nil) or
// the bucket conflicts with the store (ErrConflict). A failed round (the
// bucket unreachable, a read racing a reorg) is logged and retried.
func (p *Publisher) Run(ctx context.Context) error {
	wait := p.cfg.RetryAfter
	for {
		changed := p.src.TipChanged()
		err := p.Round(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrConflict):
			p.obs.PublishFailed()
			return err
		case err != nil:
			p.obs.PublishFailed()
			p.log.Warn().Err(err).Dur("retry_in", wait).Msg("publish round failed")
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
			wait = min(2*wait, 16*p.cfg.RetryAfter)
			continue
		}
		wait = p.cfg.RetryAfter
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-time.After(p.cfg.Recheck):
		}
	}
}

// Round publishes every range final now that the bucket's manifest does
// not list, then the import files, manifest and latest.
func (p *Publisher) Round(ctx context.Context) error {
	tip, ok := p.src.TipHeight()
	if !ok {
		return nil
	}
	n := int(rangefile.FinalCount(tip, p.cfg.ReorgSafetyDepth))
	if !p.loaded {
		ready, err := p.load(ctx, n)
		if err != nil || !ready {
			return err
		}
		p.loaded = true
	}
	lastWrite, dirty := time.Now(), false
	for i := range n {
		start := uint32(i) * rangefile.Size
		if i < len(p.published) && hasTweaks(p.published[i]) == rangefile.CoversTweaks(p.cfg.Tweaks, start) {
			continue
		}
		e, err := p.publishRange(ctx, start)
		if err != nil {
			return err
		}
		if i < len(p.published) {
			p.published[i] = e
		} else {
			p.published = append(p.published, e)
		}
		dirty = true
		if time.Since(lastWrite) >= p.cfg.ManifestEvery {
			if err := p.writeMutable(ctx); err != nil {
				return err
			}
			lastWrite, dirty = time.Now(), false
		}
	}
	if len(p.published) > 0 && (dirty || !p.synced) {
		return p.writeMutable(ctx)
	}
	return nil
}

// publishRange builds the range at start and puts each of its objects the
// bucket lacks.
func (p *Publisher) publishRange(ctx context.Context, start uint32) (rangefile.RangeEntry, error) {
	var rg rangefile.Range
	err := p.src.Read(func(r rangefile.Reader) error {
		var err error
		rg, err = rangefile.Build(r, p.tweaksFor(start), p.cfg.Network.Net, start)
		return err
	})
	if err != nil {
		return rangefile.RangeEntry{}, fmt.Errorf("build range %d: %w", start, err)
	}
	uploaded, bytes := 0, 0
	for i := range rg.Objects {
		o := &rg.Objects[i]
		put, err := p.ensure(ctx, o, true)
		if err != nil {
			return rangefile.RangeEntry{}, err
		}
		if put {
			uploaded++
			bytes += len(o.Data)
		}
	}
	p.log.Info().Uint32("start", rg.Start).Int("objects", len(rg.Objects)).Int("uploaded", uploaded).Int("bytes", bytes).
		Msg("range published")
	return rg.Entry(), nil
}

// ensure makes the bucket hold o: kept if in place with its hash, put if
// missing (or, for a mutable object, different). true if it put o.
func (p *Publisher) ensure(ctx context.Context, o *rangefile.Object, immutable bool) (bool, error) {
	want := hexOf(o.SHA256)
	info, ok, err := p.bucket.Stat(ctx, o.Name)
	if err != nil {
		return false, err
	}
	if ok && info.SHA256 == want {
		p.obs.PublishKept()
		return false, nil
	}
	if ok && immutable {
		return false, fmt.Errorf("%w: object %s holds sha256 %q, the store gives %s; a published object is never rewritten",
			ErrConflict, o.Name, info.SHA256, want)
	}
	cc, ct := rangefile.ImmutableCacheControl, "application/octet-stream"
	if !immutable {
		cc = rangefile.MutableCacheControl
	}
	if o.Name == rangefile.ManifestName || o.Name == rangefile.LatestName {
		ct = "application/json"
	}
	if err := p.bucket.Put(ctx, o.Name, o.Data, o.SHA256, cc, ct); err != nil {
		return false, err
	}
	p.obs.PublishUploaded(len(o.Data))
	return true, nil
}

// tweaksFor returns the tweak index when the range at start has tweak
// objects.
func (p *Publisher) tweaksFor(start uint32) rangefile.TweakIndex {
	if rangefile.CoversTweaks(p.cfg.Tweaks, start) {
		return p.cfg.Tweaks
	}
	return nil
}

// hasTweaks reports whether a manifest entry lists tweak objects.
func hasTweaks(e rangefile.RangeEntry) bool {
	_, ok := e.Objects[rangefile.TweaksName(rangefile.DustLevels[0], e.Start)]
	return ok
}
