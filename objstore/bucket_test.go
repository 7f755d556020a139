package objstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/miniotest"
	"github.com/cfindexd/cfindexd/internal/testtime"
)

// TestBucketAgainstMinIO: against a real MinIO, Put writes the bytes with
// their metadata under the prefix, Stat and Get read them back, List
// names them, a missing object is not found, and a Put whose SHA-256 does
// not match its bytes is refused by the server and leaves nothing.
func TestBucketAgainstMinIO(t *testing.T) {
	srv := miniotest.Start(t)
	srv.CreateBucket(t, "pub", true)
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(60*time.Second))
	defer cancel()
	b, err := Open(Config{Endpoint: srv.Endpoint, Bucket: "pub", Prefix: "p/q", Insecure: true,
		AccessKey: miniotest.AccessKey, SecretKey: miniotest.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("two thousand headers")
	sum := sha256.Sum256(data)
	if err := b.Put(ctx, "headers/0", data, sum, "public, max-age=60", "application/octet-stream"); err != nil {
		t.Fatal(err)
	}
	info, ok, err := b.Stat(ctx, "headers/0")
	if err != nil || !ok {
		t.Fatalf("stat: %v %v", ok, err)
	}
	if info.Size != int64(len(data)) || info.SHA256 != hex.EncodeToString(sum[:]) || info.CacheControl != "public, max-age=60" || info.ContentType != "application/octet-stream" {
		t.Errorf("stat %+v", info)
	}
	got, err := b.Get(ctx, "headers/0", 1<<20)
	if err != nil || string(got) != string(data) {
		t.Fatalf("get %q %v", got, err)
	}
	if _, err := b.Get(ctx, "headers/0", 3); !errors.Is(err, ErrTooLarge) {
		t.Errorf("get over its limit: %v", err)
	}
	// Anyone reads the public bucket over plain HTTP, at the prefixed key.
	resp, err := http.Get(srv.URL("pub") + "/p/q/headers/0")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != string(data) || resp.Header.Get("Cache-Control") != "public, max-age=60" {
		t.Errorf("anonymous GET: %d %q %q", resp.StatusCode, body, resp.Header.Get("Cache-Control"))
	}
	if _, ok, err := b.Stat(ctx, "headers/2000"); ok || err != nil {
		t.Errorf("stat of a missing object: %v %v", ok, err)
	}
	if _, err := b.Get(ctx, "headers/2000", 10); !errors.Is(err, ErrNotFound) {
		t.Errorf("get of a missing object: %v", err)
	}
	bad := sha256.Sum256([]byte("other bytes"))
	if err := b.Put(ctx, "filters/0", data, bad, "x", "y"); err == nil {
		t.Error("a put with a wrong SHA-256 succeeded")
	}
	if _, ok, _ := b.Stat(ctx, "filters/0"); ok {
		t.Error("a refused put left an object")
	}
	names, err := b.List(ctx, "")
	if err != nil || !slices.Equal(names, []string{"headers/0"}) {
		t.Errorf("list %q %v", names, err)
	}
}

// TestOpenRejects: configs Open cannot use.
func TestOpenRejects(t *testing.T) {
	for _, cfg := range []Config{
		{Bucket: "b"},
		{Endpoint: "h:1"},
		{Endpoint: "h:1", Bucket: "b", Prefix: "/p"},
		{Endpoint: "h:1", Bucket: "b", Prefix: "p/"},
		{Endpoint: "https://h", Bucket: "b"},
		{Endpoint: "h:1", Bucket: "b", AccessKey: "a"},
	} {
		if _, err := Open(cfg); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}
