package source

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cfindexd/cfindexd/internal/backoff"
)

// Defaults of Config.
const (
	// DefaultTimeout bounds one GET, headers and body.
	DefaultTimeout = 2 * time.Minute
	// DefaultAttempts is how often a GET is tried before its error is
	// returned.
	DefaultAttempts = 5
	// DefaultMaxManifest bounds manifest.json: about 400 bytes a range,
	// so 16 MiB is ten times mainnet's forty thousand ranges of the
	// distant future.
	DefaultMaxManifest = 16 << 20
	// DefaultMaxFiltersObject bounds one range's filters. Consensus alone
	// allows gigabytes (2,000 blocks of 4 MB), which bounds nothing;
	// mainnet's largest ranges are a few tens of MB.
	DefaultMaxFiltersObject = 256 << 20
	// maxLatest bounds `latest`, a few hundred bytes.
	maxLatest = 4 << 10
)

// Config configures a Client.
type Config struct {
	// BaseURL is http(s)://host[:port][/path]; objects are BaseURL + "/" +
	// name.
	BaseURL string
	// HTTP is the client used; nil: a client of its own.
	HTTP *http.Client
	// Timeout bounds each GET; DefaultTimeout when zero.
	Timeout time.Duration
	// Attempts per GET; DefaultAttempts when zero.
	Attempts int
	// BackoffMin and BackoffMax bound the waits between attempts (zero:
	// 200ms and 10s).
	BackoffMin, BackoffMax time.Duration
	// MaxManifest and MaxFiltersObject bound manifest.json and one range's
	// filters (zero: the defaults).
	MaxManifest, MaxFiltersObject int64
}

// Client reads a published layout. It is safe for concurrent use.
type Client struct {
	base string
	cfg  Config
}

// New checks cfg and returns its Client.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("source %q: not an http(s)://host[:port][/path] URL", cfg.BaseURL)
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = DefaultAttempts
	}
	if cfg.BackoffMin <= 0 {
		cfg.BackoffMin = 200 * time.Millisecond
	}
	if cfg.BackoffMax <= 0 {
		cfg.BackoffMax = 10 * time.Second
	}
	if cfg.MaxManifest <= 0 {
		cfg.MaxManifest = DefaultMaxManifest
	}
	if cfg.MaxFiltersObject <= 0 {
		cfg.MaxFiltersObject = DefaultMaxFiltersObject
	}
	return &Client{base: strings.TrimRight(cfg.BaseURL, "/"), cfg: cfg}, nil
}

// BaseURL is the source's base URL, without a trailing slash.
func (c *Client) BaseURL() string { return c.base }

// bounds of one GET: the object's size is exactly exact (when > 0) or at
// most max.
type bounds struct {
	exact, max int64
}

// get fetches name within b, retrying what may pass. Errors name the
// object.
func (c *Client) get(ctx context.Context, name string, b bounds) ([]byte, error) {
	bo := backoff.New(c.cfg.BackoffMin, c.cfg.BackoffMax, nil)
	var err error
	for attempt := 1; ; attempt++ {
		var body []byte
		var retry bool
		body, retry, err = c.getOnce(ctx, name, b)
		if err == nil {
			return body, nil
		}
		if !retry || attempt >= c.cfg.Attempts || ctx.Err() != nil {
			break
		}
		if werr := bo.Wait(ctx); werr != nil {
			break
		}
	}
	return nil, fmt.Errorf("%s: %w", name, err)
}

// getOnce is one GET of name; retry says whether another attempt may
// succeed.
func (c *Client) getOnce(ctx context.Context, name string, b bounds) (body []byte, retry bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/"+name, nil)
	if err != nil {
		return nil, false, err
	}
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		return nil, true, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusNotFound:
		return nil, false, ErrNotFound
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return nil, true, fmt.Errorf("HTTP %s", resp.Status)
	default:
		return nil, false, fmt.Errorf("HTTP %s", resp.Status)
	}
	limit := b.max
	if b.exact > 0 {
		limit = b.exact
	}
	if resp.ContentLength > limit {
		return nil, false, fmt.Errorf("%w: declares %d bytes, at most %d", ErrTooLarge, resp.ContentLength, limit)
	}
	// Capacity from a declared length only once it is known to be within
	// the bound; the buffer grows with the bytes that arrive.
	var buf bytes.Buffer
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength))
	}
	n, err := buf.ReadFrom(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, true, fmt.Errorf("read body: %w", err)
	}
	if n > limit {
		return nil, false, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return nil, true, fmt.Errorf("body of %d bytes, declared %d", n, resp.ContentLength)
	}
	if b.exact > 0 && n != b.exact {
		return nil, false, fmt.Errorf("%w: %d bytes, want %d", ErrSize, n, b.exact)
	}
	return buf.Bytes(), false, nil
}

// getVerified fetches name within b and checks its SHA-256 against want.
func (c *Client) getVerified(ctx context.Context, name string, b bounds, want Digest) ([]byte, error) {
	body, err := c.get(ctx, name, b)
	if err != nil {
		return nil, err
	}
	if got := Digest(sha256.Sum256(body)); got != want {
		return nil, fmt.Errorf("%s: %w: the object hashes to %s, the manifest names %s", name, ErrHashMismatch, got, want)
	}
	return body, nil
}

// Snapshot returns the source's `latest` and the manifest it names. The
// manifest must hash to latest's manifest_sha256 and end at its range;
// since a publisher rewrites the manifest before latest, a mismatch is
// read again once before it is an error naming manifest.json.
func (c *Client) Snapshot(ctx context.Context) (Latest, Manifest, error) {
	var err error
	for try := 0; try < 2; try++ {
		var (
			l Latest
			m Manifest
		)
		if l, m, err = c.snapshotOnce(ctx); err == nil || !errors.Is(err, ErrHashMismatch) {
			return l, m, err
		}
	}
	return Latest{}, Manifest{}, err
}

func (c *Client) snapshotOnce(ctx context.Context) (Latest, Manifest, error) {
	raw, err := c.get(ctx, LatestName, bounds{max: maxLatest})
	if err != nil {
		return Latest{}, Manifest{}, err
	}
	l, err := DecodeLatest(raw)
	if err != nil {
		return Latest{}, Manifest{}, fmt.Errorf("%s: %w", LatestName, err)
	}
	raw, err = c.get(ctx, ManifestName, bounds{max: c.cfg.MaxManifest})
	if err != nil {
		return Latest{}, Manifest{}, err
	}
	if got := Digest(sha256.Sum256(raw)); got != l.ManifestSHA256 {
		return Latest{}, Manifest{}, fmt.Errorf("%s: %w: it hashes to %s, latest names %s", ManifestName, ErrHashMismatch, got, l.ManifestSHA256)
	}
	m, err := DecodeManifest(raw)
	if err != nil {
		return Latest{}, Manifest{}, fmt.Errorf("%s: %w", ManifestName, err)
	}
	if !l.Matches(&m) {
		return Latest{}, Manifest{}, fmt.Errorf("%s: %w: its last range is not the one latest names (%d..%d, %s)", ManifestName, ErrBadManifest, l.Start, l.End, l.EndBlockHash)
	}
	return l, m, nil
}

// RangeObjects are one range's three objects, each checked against the
// manifest's SHA-256 and its size bound.
type RangeObjects struct {
	Range         Range
	Headers       []byte // HeadersObjectSize bytes
	FilterHeaders []byte // FilterHeadersObject bytes
	Filters       []byte // RangeSize CompactSize-prefixed filters, unparsed
}

// FetchRange fetches and checks r's objects.
func (c *Client) FetchRange(ctx context.Context, r Range) (RangeObjects, error) {
	out := RangeObjects{Range: r}
	var err error
	if out.Headers, err = c.getVerified(ctx, HeadersName(r.Start), bounds{exact: HeadersObjectSize}, r.Objects[HeadersName(r.Start)]); err != nil {
		return RangeObjects{}, err
	}
	if out.FilterHeaders, err = c.getVerified(ctx, FilterHeadersName(r.Start), bounds{exact: FilterHeadersObject}, r.Objects[FilterHeadersName(r.Start)]); err != nil {
		return RangeObjects{}, err
	}
	if out.Filters, err = c.getVerified(ctx, FiltersName(r.Start), bounds{max: c.cfg.MaxFiltersObject}, r.Objects[FiltersName(r.Start)]); err != nil {
		return RangeObjects{}, err
	}
	return out, nil
}
