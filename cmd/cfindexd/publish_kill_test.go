package main

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/miniotest"
	"github.com/cfindexd/cfindexd/internal/tcptest"
	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/rangefile"
)

// putRecord is one PUT the recording proxy saw: the object key, the run
// of the daemon that sent it, and MinIO's status (0: never answered).
type putRecord struct {
	key    string
	run    int
	status int
}

// recordingProxy forwards S3 requests to MinIO, holding each for a random
// moment before and after MinIO handles it (so that a publish lasts long
// enough to be killed anywhere), and records every PUT and its outcome.
type recordingProxy struct {
	mu   sync.Mutex
	rng  *rand.Rand
	run  int
	puts []putRecord
}

// pause sleeps a random 40–160 ms.
func (p *recordingProxy) pause() {
	p.mu.Lock()
	d := time.Duration(40+p.rng.IntN(120)) * time.Millisecond
	p.mu.Unlock()
	time.Sleep(d)
}

// serve starts the proxy in front of the S3 API at upstream (host:port)
// and returns its address; it stops at the test's end.
func (p *recordingProxy) serve(t *testing.T, upstream string) string {
	target := &url.URL{Scheme: "http", Host: upstream}
	rp := &httputil.ReverseProxy{
		// The client signed the Host it dialled: keep it (MinIO checks
		// the signature against it).
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.Host = r.In.Host },
		ModifyResponse: func(resp *http.Response) error {
			if resp.Request.Method == http.MethodPut {
				p.record(resp.Request.URL.Path, resp.StatusCode)
			}
			p.pause()
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Method == http.MethodPut {
				p.record(r.URL.Path, 0)
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.pause()
		rp.ServeHTTP(w, r)
	}), ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

func (p *recordingProxy) record(path string, status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := strings.TrimPrefix(path, "/"+publishBucket+"/"+publishPrefix+"/")
	p.puts = append(p.puts, putRecord{key: key, run: p.run, status: status})
}

func (p *recordingProxy) nextRun() {
	p.mu.Lock()
	p.run++
	p.mu.Unlock()
}

// TestPublishSurvivesKill9: a publish through a slow proxy is killed with
// SIGKILL at ten random moments (fixed seed), then run to the end. The
// bucket is then complete and byte-identical to what cfindexd serves, and
// the proxy's log shows that no object was put again after a PUT of it
// had succeeded, and that the kills fell inside the publish (its objects
// went up over several runs).
func TestPublishSurvivesKill9(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(10*time.Minute))
	defer cancel()
	s3 := miniotest.Start(t)
	s3.CreateBucket(t, publishBucket, true)
	proxy := &recordingProxy{rng: rand.New(rand.NewPCG(20, 26))}
	endpoint := proxy.serve(t, s3.Endpoint)
	node := btcdtest.Start(t, btcdtest.Options{TxIndex: true, WalletSeed: 92})
	if _, err := node.Generate(ctx, publishBlocks); err != nil {
		t.Fatal(err)
	}
	datadir := t.TempDir()
	indexChain(t, publishBlocks, nodeArgs(node, "regtest", datadir)...)
	httpAddr := tcptest.FreeAddr(t)
	args := publishArgs(node, datadir, httpAddr, endpoint)
	kills := rand.New(rand.NewPCG(9, 9))
	const objects = 3*3 + 4 // three ranges, the import files, manifest and latest
	for i := range 10 {
		proxy.nextRun()
		d := startDaemon(t, args...)
		d.waitLog(time.Minute, msgIs("publishing final ranges to the bucket"))
		time.Sleep(time.Duration(kills.IntN(2000)) * time.Millisecond)
		d.kill9()
		ok := proxy.succeeded()
		t.Logf("kill %d: %d objects put so far", i+1, ok)
		if ok >= objects {
			t.Errorf("kill %d came after the publish had put all %d objects", i+1, objects)
		}
	}
	proxy.nextRun()
	d := startDaemon(t, args...)
	d.waitLog(5*time.Minute, manifestPublished(3*rangefile.Size-1))
	checkPublished(ctx, t, node, s3.URL(publishBucket)+"/"+publishPrefix, "http://"+httpAddr, 3, false)
	if code, _ := d.terminate(30 * time.Second); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}

	done := map[string]int{} // key: the run whose PUT of it succeeded
	runs := map[int]bool{}
	for _, p := range proxy.snapshot() {
		if run, ok := done[p.key]; ok {
			t.Errorf("%s put again in run %d (status %d) after a PUT of it succeeded in run %d", p.key, p.run, p.status, run)
		}
		if p.status == http.StatusOK {
			done[p.key] = p.run
			runs[p.run] = true
		}
	}
	if len(done) != objects {
		t.Errorf("%d objects put successfully, want %d: %v", len(done), objects, done)
	}
	if len(runs) < 3 {
		t.Errorf("the objects went up in %d runs: the kills missed the publish", len(runs))
	}
}

// succeeded returns how many PUTs so far MinIO answered 200.
func (p *recordingProxy) succeeded() int {
	n := 0
	for _, r := range p.snapshot() {
		if r.status == http.StatusOK {
			n++
		}
	}
	return n
}

// snapshot returns the PUTs recorded so far.
func (p *recordingProxy) snapshot() []putRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]putRecord(nil), p.puts...)
}
