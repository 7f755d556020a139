package objstore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/miniotest"
	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/minio/minio-go/v7"
)

// genReader makes up n bytes from a seed as they are read, holding
// nothing of them, and records the live heap (after a collection) every
// MiB; fail, when set, is returned instead of the last bytes.
type genReader struct {
	rng     *rand.ChaCha8
	left    int64
	sinceGC int
	peak    uint64
	fail    error
}

func newGenReader(seed byte, n int64) *genReader {
	return &genReader{rng: rand.NewChaCha8([32]byte{seed}), left: n}
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.left == 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), g.left, 64<<10)]
	if g.fail != nil && int64(len(p)) == g.left {
		return 0, g.fail
	}
	_, _ = g.rng.Read(p)
	g.left -= int64(len(p))
	if g.sinceGC += len(p); g.sinceGC >= 1<<20 {
		g.sinceGC = 0
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		g.peak = max(g.peak, ms.HeapAlloc)
	}
	return len(p), nil
}

// streamSum is the SHA-256 of genReader's bytes.
func streamSum(seed byte, n int64) [32]byte {
	h := sha256.New()
	_, _ = io.Copy(h, newGenReader(seed, n))
	var s [32]byte
	h.Sum(s[:0])
	return s
}

// TestPutStreamAgainstMinIO: PutStream writes a 40 MiB stream (a
// multipart upload of PartSize parts, each with S3's SHA-256 checksum)
// and a 1 MiB one (one PUT) byte for byte, with the whole object's
// SHA-256 as its metadata, holding about one part of live heap whatever
// the object's size; a stream that fails before its end leaves no object.
func TestPutStreamAgainstMinIO(t *testing.T) {
	srv := miniotest.Start(t)
	srv.CreateBucket(t, "pub", false)
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(120*time.Second))
	defer cancel()
	b, err := Open(Config{Endpoint: srv.Endpoint, Bucket: "pub", Prefix: "p", Insecure: true,
		AccessKey: miniotest.AccessKey, SecretKey: miniotest.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		size int64
	}{{"headers/import/latest", 40 << 20}, {"filter-headers/import/latest", 1 << 20}} {
		sum := streamSum(1, tc.size)
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		g := newGenReader(1, tc.size)
		if err := b.PutStream(ctx, tc.name, g, tc.size, sum, "public, max-age=60", "application/octet-stream"); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if g.peak > ms.HeapAlloc {
			t.Logf("%s: %d MiB, peak live heap %d KiB above the start", tc.name, tc.size>>20, (g.peak-ms.HeapAlloc)>>10)
			if g.peak-ms.HeapAlloc > PartSize+4<<20 {
				t.Errorf("%s: %d bytes live at the peak, want at most a part (%d) and 4 MiB", tc.name, g.peak-ms.HeapAlloc, PartSize)
			}
		}
		info, ok, err := b.Stat(ctx, tc.name)
		if err != nil || !ok || info.Size != tc.size || info.SHA256 != hex.EncodeToString(sum[:]) {
			t.Fatalf("%s: stat %+v %v %v", tc.name, info, ok, err)
		}
		// S3's own checksum: the whole object's SHA-256 for one PUT, the
		// checksum of the parts' SHA-256s ("-<parts>") for a multipart one.
		oi, err := srv.Client().StatObject(ctx, "pub", b.Key(tc.name), minio.StatObjectOptions{Checksum: true})
		wantS3 := base64.StdEncoding.EncodeToString(sum[:])
		if tc.size > PartSize {
			wantS3 = "-" + strconv.Itoa(int((tc.size+PartSize-1)/PartSize))
		}
		if err != nil || !strings.HasSuffix(oi.ChecksumSHA256, wantS3) {
			t.Errorf("%s: S3's checksum %q (%s), want one ending %q (%v)", tc.name, oi.ChecksumSHA256, oi.ChecksumMode, wantS3, err)
		}
		got, err := b.Get(ctx, tc.name, 64<<20)
		if err != nil || sha256.Sum256(got) != sum {
			t.Fatalf("%s: %d bytes read back (%v)", tc.name, len(got), err)
		}
	}
	errStop := errors.New("the chain changed")
	for _, size := range []int64{40 << 20, 1 << 20} {
		g := newGenReader(2, size)
		g.fail = errStop
		err := b.PutStream(ctx, "broken", g, size, streamSum(2, size), "x", "y")
		if !errors.Is(err, errStop) {
			t.Errorf("%d bytes failing at the end: %v", size, err)
		}
		if _, ok, _ := b.Stat(ctx, "broken"); ok {
			t.Errorf("%d bytes failing at the end: an object was written", size)
		}
	}
}
