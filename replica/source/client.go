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
	"strconv"
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
	// DefaultMaxWait is how long a GET keeps retrying a source that
	// answers 503 or 429 with Retry-After (a cfindexd warming its
	// manifest's catalog: minutes on mainnet).
	DefaultMaxWait = 15 * time.Minute
	// maxRetryAfter caps one wait a Retry-After asks for.
	maxRetryAfter = time.Minute
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
	// MaxWait bounds the time one GET spends waiting as answers of 503 or
	// 429 with Retry-After ask (those do not count as Attempts);
	// DefaultMaxWait when zero.
	MaxWait time.Duration
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
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = DefaultMaxWait
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

// get fetches name within b, retrying what may pass. An answer of 503
// or 429 with Retry-After (a cfindexd warming its manifest's catalog) is
// retried after the wait it asks for (at most a minute), without counting
// as an attempt, while the waits stay within Config.MaxWait and end
// before ctx's deadline; other failures that may pass are retried with
// backoff up to Config.Attempts. Errors name the object.
func (c *Client) get(ctx context.Context, name string, b bounds) ([]byte, error) {
	bo := backoff.New(c.cfg.BackoffMin, c.cfg.BackoffMax, nil)
	var (
		err    error
		waited time.Duration
	)
	for attempt := 1; ; {
		var (
			body  []byte
			retry bool
			after time.Duration
		)
		body, retry, after, err = c.getOnce(ctx, name, b)
		if err == nil {
			return body, nil
		}
		if !retry || ctx.Err() != nil {
			break
		}
		if after > 0 {
			if waited+after > c.cfg.MaxWait {
				err = fmt.Errorf("%w; still so after waiting %v", err, waited)
				break
			}
			if d, ok := ctx.Deadline(); ok && time.Until(d) < after {
				err = fmt.Errorf("%w; the wait it asks for ends after this call's deadline", err)
				break
			}
			t := time.NewTimer(after)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, fmt.Errorf("%s: %w", name, err)
			case <-t.C:
			}
			waited += after
			continue
		}
		if attempt >= c.cfg.Attempts {
			break
		}
		attempt++
		if werr := bo.Wait(ctx); werr != nil {
			break
		}
	}
	return nil, fmt.Errorf("%s: %w", name, err)
}

// retryAfter parses a Retry-After header (seconds or an HTTP date) into
// a wait of at least a second and at most maxRetryAfter; 0 without one.
func retryAfter(h string, now time.Time) time.Duration {
	if h == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseUint(h, 10, 32); err == nil {
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(h); err == nil {
		d = t.Sub(now)
	} else {
		return 0
	}
	return min(max(d, time.Second), maxRetryAfter)
}

// getOnce is one GET of name; retry says whether another attempt may
// succeed, after the wait a 503 or 429 asks for with Retry-After.
func (c *Client) getOnce(ctx context.Context, name string, b bounds) (body []byte, retry bool, after time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/"+name, nil)
	if err != nil {
		return nil, false, 0, err
	}
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		return nil, true, 0, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusNotFound:
		return nil, false, 0, ErrNotFound
	case resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests:
		return nil, true, retryAfter(resp.Header.Get("Retry-After"), time.Now()), fmt.Errorf("HTTP %s", resp.Status)
	case resp.StatusCode >= 500:
		return nil, true, 0, fmt.Errorf("HTTP %s", resp.Status)
	default:
		return nil, false, 0, fmt.Errorf("HTTP %s", resp.Status)
	}
	limit := b.max
	if b.exact > 0 {
		limit = b.exact
	}
	if resp.ContentLength > limit {
		return nil, false, 0, fmt.Errorf("%w: declares %d bytes, at most %d", ErrTooLarge, resp.ContentLength, limit)
	}
	// Capacity from a declared length only once it is known to be within
	// the bound; the buffer grows with the bytes that arrive.
	var buf bytes.Buffer
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength))
	}
	n, err := buf.ReadFrom(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, true, 0, fmt.Errorf("read body: %w", err)
	}
	if n > limit {
		return nil, false, 0, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return nil, true, 0, fmt.Errorf("body of %d bytes, declared %d", n, resp.ContentLength)
	}
	if b.exact > 0 && n != b.exact {
		return nil, false, 0, fmt.Errorf("%w: %d bytes, want %d", ErrSize, n, b.exact)
	}
	return buf.Bytes(), false, 0, nil
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
