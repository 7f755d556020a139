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
	exited   chan struct{}
}

// Start runs MinIO over a fresh directory on two loopback ports (S3 and
// console) and waits until it is live; it is stopped at the test's end.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := Binary(tb)
	s, err := Launch(context.Background(), bin, tb.TempDir())
	if err != nil {
		tb.Fatalf("miniotest: %v", err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// Launch runs the minio binary bin over dir on two free loopback ports
// and waits until it is live, for programs without a testing.TB (cfbench).
// The caller stops it.
func Launch(ctx context.Context, bin, dir string) (*Server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	console, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "server", dir, "--address", addr, "--console-address", console, "--quiet")
	cmd.Env = []string{"HOME=" + dir, "PATH=/usr/bin:/bin", "MINIO_ROOT_USER=" + AccessKey, "MINIO_ROOT_PASSWORD=" + SecretKey,
		"MINIO_UPDATE=off", "MINIO_BROWSER=off"}
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start minio: %w", err)
	}
	s := &Server{Endpoint: addr, cmd: cmd, log: log, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.exited) }()
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
		case <-s.exited:
			return nil, fmt.Errorf("minio exited before it was live:\n%s", log.String())
		case <-ctx.Done():
			s.Stop()
			return nil, ctx.Err()
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("minio not live at %s in time:\n%s", addr, log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	c, err := minio.New(addr, &minio.Options{Creds: credentials.NewStaticV4(AccessKey, SecretKey, "")})
	if err != nil {
		s.Stop()
		return nil, fmt.Errorf("client: %w", err)
	}
	s.client = c
	return s, nil
}

// Stop stops the server (SIGTERM, then SIGKILL after a while) and waits
// for it.
func (s *Server) Stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(testtime.Scale(20 * time.Second)):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
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
	if err := s.MakeBucket(ctx, name, public); err != nil {
		tb.Fatalf("miniotest: %v", err)
	}
}

// MakeBucket is CreateBucket without a testing.TB.
func (s *Server) MakeBucket(ctx context.Context, name string, public bool) error {
	if err := s.client.MakeBucket(ctx, name, minio.MakeBucketOptions{}); err != nil {
		return fmt.Errorf("make bucket %s: %w", name, err)
	}
	if !public {
		return nil
	}
	policy := strings.ReplaceAll(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["*"]},`+
		`"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::BUCKET/*"]}]}`, "BUCKET", name)
	if err := s.client.SetBucketPolicy(ctx, name, policy); err != nil {
		return fmt.Errorf("bucket policy of %s: %w", name, err)
	}
	return nil
}

// URL is the plain-HTTP base URL of a public bucket.
func (s *Server) URL(bucket string) string { return "http://" + s.Endpoint + "/" + bucket }

// Log returns what the server printed so far.
func (s *Server) Log() string { return s.log.String() }

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
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
