package miniotest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/cfindexd/cfindexd/internal/testtime"
)

// Root credentials of every test server.
const (
	AccessKey = "cfindexd-test"
	SecretKey = "cfindexd-test-secret"
)

// Server is a running MinIO server.
type Server struct {
	// Endpoint is host:port of the S3 API (plain HTTP).
	Endpoint string
	cmd      *exec.Cmd
	log      *syncBuffer
	client   *minio.Client
}

// Start runs MinIO over a fresh directory on two loopback ports (S3 and
// console) and waits until it is live; it is stopped at the test's end.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := Binary(tb)
	dir := tb.TempDir()
	addr, console := freeAddr(tb), freeAddr(tb)
	cmd := exec.Command(bin, "server", dir, "--address", addr, "--console-address", console, "--quiet")
	cmd.Env = []string{"HOME=" + dir, "PATH=/usr/bin:/bin", "MINIO_ROOT_USER=" + AccessKey, "MINIO_ROOT_PASSWORD=" + SecretKey,
		"MINIO_UPDATE=off", "MINIO_BROWSER=off"}
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("miniotest: start minio: %v", err)
	}
	s := &Server{Endpoint: addr, cmd: cmd, log: log}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(testtime.Scale(20 * time.Second)):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	deadline := time.Now().Add(testtime.Scale(60 * time.Second))
	for {
		resp, err := http.Get("http://" + addr + "/minio/health/live")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-exited:
			tb.Fatalf("miniotest: minio exited before it was live:\n%s", log.String())
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("miniotest: minio not live at %s after %v:\n%s", addr, time.Until(deadline), log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	c, err := minio.New(addr, &minio.Options{Creds: credentials.NewStaticV4(AccessKey, SecretKey, "")})
	if err != nil {
		tb.Fatalf("miniotest: client: %v", err)
	}
	s.client = c
	return s
}

// Client returns a client with the root credentials.
func (s *Server) Client() *minio.Client { return s.client }

// CreateBucket creates a bucket; public lets anyone GET its objects over
// plain HTTP at http://<Endpoint>/<bucket>/<key>, as a CDN in front of a
// bucket would.
func (s *Server) CreateBucket(tb testing.TB, name string, public bool) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(30*time.Second))
	defer cancel()
	if err := s.client.MakeBucket(ctx, name, minio.MakeBucketOptions{}); err != nil {
		tb.Fatalf("miniotest: make bucket %s: %v", name, err)
	}
	if !public {
		return
	}
	policy := strings.ReplaceAll(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["*"]},`+
		`"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::BUCKET/*"]}]}`, "BUCKET", name)
	if err := s.client.SetBucketPolicy(ctx, name, policy); err != nil {
		tb.Fatalf("miniotest: bucket policy of %s: %v", name, err)
	}
}

// URL is the plain-HTTP base URL of a public bucket.
func (s *Server) URL(bucket string) string { return "http://" + s.Endpoint + "/" + bucket }

// Log returns what the server printed so far.
func (s *Server) Log() string { return s.log.String() }

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("miniotest: listen: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// String describes the server.
func (s *Server) String() string { return fmt.Sprintf("minio at %s", s.Endpoint) }

// syncBuffer is a buffer the process writes and the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
