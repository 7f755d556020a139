// Package publishwire is cfindexd's wiring of the publisher (package
// publish): the s3* keys' checks, the bucket they name, and the store as
// the publisher's source, read through the HTTP server's adapters so the
// bytes published are the bytes served. It lives apart from
// cmd/cfindexd's main package to keep that within its size.
package publishwire

import (
	"errors"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/httpapi"
	"github.com/cfindexd/cfindexd/metrics"
	"github.com/cfindexd/cfindexd/netparams"
	"github.com/cfindexd/cfindexd/objstore"
	"github.com/cfindexd/cfindexd/publish"
	"github.com/cfindexd/cfindexd/rangefile"
	"github.com/cfindexd/cfindexd/store"
)

// Keys are the s3* configuration keys.
type Keys struct {
	Endpoint, Bucket, Region, Prefix string
	Insecure                         bool
	AccessKey, SecretKey             string
}

// On reports whether publishing is on: a bucket is set.
func (k Keys) On() bool { return k.Bucket != "" }

// Check checks the keys: with a bucket, an endpoint and both credentials
// or neither; without one, no other key.
func (k Keys) Check() error {
	if !k.On() {
		for _, o := range []struct {
			name string
			set  bool
		}{{"s3endpoint", k.Endpoint != ""}, {"s3region", k.Region != ""}, {"s3prefix", k.Prefix != ""},
			{"s3insecure", k.Insecure}, {"s3accesskey", k.AccessKey != ""}, {"s3secretkey", k.SecretKey != ""}} {
			if o.set {
				return fmt.Errorf("%s is set but s3bucket is not: publishing needs a bucket", o.name)
			}
		}
		return nil
	}
	if k.Endpoint == "" {
		return errors.New("s3bucket is set but s3endpoint is not: give the S3 API's host[:port], e.g. s3.amazonaws.com")
	}
	if (k.AccessKey == "") != (k.SecretKey == "") {
		return errors.New("s3accesskey and s3secretkey: set both, or neither to use the AWS environment's credentials")
	}
	if _, err := objstore.Open(k.bucketConfig(nil)); err != nil {
		return fmt.Errorf("s3 keys: %w", err)
	}
	return nil
}

// bucketConfig is the bucket the keys name; an empty region falls back
// to AWS_REGION (getenv; nil: none) as the AWS SDK's does.
func (k Keys) bucketConfig(getenv func(string) string) objstore.Config {
	region := k.Region
	if region == "" && getenv != nil {
		region = getenv("AWS_REGION")
	}
	return objstore.Config{Endpoint: k.Endpoint, Bucket: k.Bucket, Region: region, Prefix: k.Prefix,
		Insecure: k.Insecure, AccessKey: k.AccessKey, SecretKey: k.SecretKey}
}

// Chain is what the publisher reads: the store, the HTTP server's view of
// it, and the silent-payment index (nil when off).
type Chain struct {
	Store *store.Store
	View  httpapi.ChainView
	SP    httpapi.SPIndex
}

// New returns the publisher of c's final ranges to the bucket k names
// (getenv reads AWS_REGION), reporting to m, which it registers the
// publisher's metrics with.
func New(k Keys, getenv func(string) string, nw netparams.Network, depth uint32, c Chain, m *metrics.Metrics, log zerolog.Logger) (*publish.Publisher, error) {
	b, err := objstore.Open(k.bucketConfig(getenv))
	if err != nil {
		return nil, err
	}
	m.WatchPublish()
	log.Info().Str("endpoint", k.Endpoint).Str("bucket", k.Bucket).Str("prefix", k.Prefix).
		Msg("publishing final ranges to the bucket")
	return publish.New(publish.Config{
		Network:          rangefile.Network{Name: nw.Name, Net: nw.Params.Net, Genesis: *nw.Params.GenesisHash},
		ReorgSafetyDepth: depth,
		Tweaks:           httpapi.RangeTweaks(c.SP),
	}, source{c}, b, m, log), nil
}

// source adapts the store to publish.Source.
type source struct{ c Chain }

var _ publish.Source = source{}

// TipHeight implements publish.Source.
func (s source) TipHeight() (uint32, bool) {
	t, ok := s.c.Store.Tip()
	return t.Height, ok
}

// Read implements publish.Source with one state of the view.
func (s source) Read(fn func(rangefile.Reader) error) error {
	return s.c.View.Read(func(r httpapi.ChainReader) error { return fn(httpapi.RangeReader(r)) })
}

// TipChanged implements publish.Source.
func (s source) TipChanged() <-chan struct{} { return s.c.Store.TipChanged() }
