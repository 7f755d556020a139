package objstore

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Sentinel errors.
var (
	// ErrBadConfig is returned by Open for a config it cannot use.
	ErrBadConfig = errors.New("objstore: bad config")
	// ErrNotFound is returned by Get for an object that does not exist.
	ErrNotFound = errors.New("objstore: no such object")
	// ErrTooLarge is returned by Get for an object above its limit.
	ErrTooLarge = errors.New("objstore: object too large")
)

// SHA256Key is the user metadata key of an object's SHA-256 (sent as
// x-amz-meta-sha256).
const SHA256Key = "sha256"

// Config names a bucket and how to reach it.
type Config struct {
	// Endpoint is host[:port] of the S3 API (s3.amazonaws.com,
	// <account>.r2.cloudflarestorage.com, 127.0.0.1:9000).
	Endpoint string
	// Region is the bucket's region; empty lets the client ask.
	Region string
	Bucket string
	// Prefix is prepended to every name with a slash; empty for none.
	// It has no leading or trailing slash.
	Prefix string
	// Insecure speaks plain HTTP to the endpoint (MinIO on loopback).
	Insecure bool
	// AccessKey and SecretKey, when both set, are the credentials;
	// otherwise the AWS environment chain is used (package doc).
	AccessKey, SecretKey string
	// Transport replaces the HTTP transport (tests); nil for the default.
	Transport http.RoundTripper
}

// Bucket is one bucket under one prefix. It is safe for concurrent use.
type Bucket struct {
	c      *minio.Client
	bucket string
	prefix string
}

// Info is what Stat tells of an object.
type Info struct {
	Size         int64
	SHA256       string // the x-amz-meta-sha256 metadata, "" if absent
	CacheControl string
	ContentType  string
}

// Open returns the bucket cfg names. It does not contact the server.
func Open(cfg Config) (*Bucket, error) {
	if cfg.Endpoint == "" || cfg.Bucket == "" {
		return nil, fmt.Errorf("%w: endpoint and bucket are required", ErrBadConfig)
	}
	if strings.HasPrefix(cfg.Prefix, "/") || strings.HasSuffix(cfg.Prefix, "/") {
		return nil, fmt.Errorf("%w: prefix %q has a leading or trailing slash", ErrBadConfig, cfg.Prefix)
	}
	if strings.Contains(cfg.Endpoint, "/") {
		return nil, fmt.Errorf("%w: endpoint %q must be host[:port], without a scheme or path", ErrBadConfig, cfg.Endpoint)
	}
	if (cfg.AccessKey == "") != (cfg.SecretKey == "") {
		return nil, fmt.Errorf("%w: set both the access key and the secret key, or neither", ErrBadConfig)
	}
	creds := credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{},
		&credentials.FileAWSCredentials{},
		&credentials.IAM{},
	})
	if cfg.AccessKey != "" {
		creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, "")
	}
	c, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds: creds, Secure: !cfg.Insecure, Region: cfg.Region, Transport: cfg.Transport, TrailingHeaders: true,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	return &Bucket{c: c, bucket: cfg.Bucket, prefix: cfg.Prefix}, nil
}

// Key returns the object key of name: the prefix, a slash, the name.
func (b *Bucket) Key(name string) string {
	if b.prefix == "" {
		return name
	}
	return b.prefix + "/" + name
}

// Put writes data as name in one PUT, with its SHA-256 sum (which the
// server checks), cacheControl and contentType.
func (b *Bucket) Put(ctx context.Context, name string, data []byte, sum [32]byte, cacheControl, contentType string) error {
	_, err := b.c.PutObject(ctx, b.bucket, b.Key(name), bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{
		ContentType:  contentType,
		CacheControl: cacheControl,
		UserMetadata: map[string]string{
			SHA256Key:               hex.EncodeToString(sum[:]),
			"x-amz-checksum-sha256": base64.StdEncoding.EncodeToString(sum[:]),
		},
		DisableMultipart: true,
	})
	if err != nil {
		return fmt.Errorf("put %s: %w", b.Key(name), err)
	}
	return nil
}

// PartSize is the part size of PutStream's multipart uploads, and the
// size up to which it writes in one PUT. minio-go holds one buffer of
// this size while it uploads a stream of known size.
const PartSize = 16 << 20

// PutStream writes the size bytes of r as name, with sum (their SHA-256,
// which the caller knows from a first pass) as its x-amz-meta-sha256,
// cacheControl and contentType, without holding them: up to PartSize in
// one PUT, above it a multipart upload of PartSize parts, read one part at
// a time into one buffer. Each PUT or part carries S3's SHA-256 checksum
// of its own bytes, which the server checks (for a multipart object S3's
// checksum is one of the parts' checksums, not sum: sum is checked by r,
// see rangefile.ImportStream.Verify). When r fails, the upload is aborted
// and the object is not written.
func (b *Bucket) PutStream(ctx context.Context, name string, r io.Reader, size int64, sum [32]byte, cacheControl, contentType string) error {
	_, err := b.c.PutObject(ctx, b.bucket, b.Key(name), onlyReader{r}, size, minio.PutObjectOptions{
		ContentType:  contentType,
		CacheControl: cacheControl,
		UserMetadata: map[string]string{SHA256Key: hex.EncodeToString(sum[:])},
		Checksum:     minio.ChecksumSHA256,
		PartSize:     PartSize,
	})
	if err != nil {
		return fmt.Errorf("put %s: %w", b.Key(name), err)
	}
	return nil
}

// onlyReader hides every method of a reader but Read, so minio-go takes
// the one-buffer sequential upload (not its parallel io.ReaderAt upload,
// which holds a buffer per thread).
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// Stat returns what the bucket holds as name; false if nothing.
func (b *Bucket) Stat(ctx context.Context, name string) (Info, bool, error) {
	oi, err := b.c.StatObject(ctx, b.bucket, b.Key(name), minio.StatObjectOptions{})
	if err != nil {
		if isNotFound(err) {
			return Info{}, false, nil
		}
		return Info{}, false, fmt.Errorf("stat %s: %w", b.Key(name), err)
	}
	info := Info{Size: oi.Size, ContentType: oi.ContentType, CacheControl: oi.Metadata.Get("Cache-Control")}
	for k, v := range oi.UserMetadata {
		if strings.EqualFold(k, SHA256Key) {
			info.SHA256 = v
		}
	}
	return info, true, nil
}

// Get returns the bytes of name, at most limit of them.
func (b *Bucket) Get(ctx context.Context, name string, limit int64) ([]byte, error) {
	obj, err := b.c.GetObject(ctx, b.bucket, b.Key(name), minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", b.Key(name), err)
	}
	defer obj.Close()
	data, err := io.ReadAll(io.LimitReader(obj, limit+1))
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("get %s: %w", b.Key(name), ErrNotFound)
		}
		return nil, fmt.Errorf("get %s: %w", b.Key(name), err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("get %s: %w (limit %d)", b.Key(name), ErrTooLarge, limit)
	}
	return data, nil
}

// List returns the names (without the prefix) of the objects whose names
// start with under.
func (b *Bucket) List(ctx context.Context, under string) ([]string, error) {
	var out []string
	base := b.Key("")
	for oi := range b.c.ListObjectsIter(ctx, b.bucket, minio.ListObjectsOptions{Prefix: base + under, Recursive: true}) {
		if oi.Err != nil {
			return nil, fmt.Errorf("list %s: %w", base+under, oi.Err)
		}
		out = append(out, strings.TrimPrefix(oi.Key, base))
	}
	return out, nil
}

// isNotFound reports whether err is S3's answer for a missing key.
func isNotFound(err error) bool {
	r := minio.ToErrorResponse(err)
	return r.StatusCode == http.StatusNotFound || r.Code == "NoSuchKey"
}
