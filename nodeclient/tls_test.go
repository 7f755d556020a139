package nodeclient

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeServerCert writes srv's certificate as PEM, as btcd's rpc.cert.
func writeServerCert(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rpc.cert")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(p, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// selfSigned makes a certificate for 127.0.0.1, as btcd makes its own.
func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(7),
		Subject:               pkix.Name{Organization: []string{"another btcd"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func rpcHandler(tip string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"result":"`+tip+`","error":null,"id":1}`+"\n")
	})
}

const someHash = "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206"

// With rpccert the client speaks HTTPS trusting that certificate only;
// speaking to the wrong kind of server, or to a server with another
// certificate, fails at once with ErrTLS, ErrPermanent and a reason that
// says what to change.
func TestRPCCertAndTLSMismatch(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(rpcHandler(someHash))
	defer tlsSrv.Close()
	// httptest's servers share one certificate; this one has its own.
	otherTLS := httptest.NewUnstartedServer(rpcHandler(someHash))
	otherTLS.TLS = &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}}
	otherTLS.StartTLS()
	defer otherTLS.Close()
	plain := httptest.NewServer(rpcHandler(someHash))
	defer plain.Close()
	cert := writeServerCert(t, tlsSrv)
	host := func(s *httptest.Server) string {
		return strings.TrimPrefix(strings.TrimPrefix(s.URL, "https://"), "http://")
	}
	ctx := testCtx(t)

	c, err := NewClient(Config{Host: host(tlsSrv), User: "u", Password: "p", RPCCert: cert, Timeout: 5 * time.Second}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if h, err := c.GetBestBlockHash(ctx); err != nil || h.String() != someHash {
		t.Fatalf("HTTPS with rpccert: %v %v", h, err)
	}

	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"plain HTTP to TLS", Config{Host: host(tlsSrv)}, "speaks TLS (btcd's default): set rpccert = <btcd datadir>/rpc.cert, or start btcd with --notls"},
		{"HTTPS to plain", Config{Host: host(plain), RPCCert: cert}, "speaks plain HTTP, not TLS: remove rpccert"},
		{"another certificate", Config{Host: host(otherTLS), RPCCert: cert}, "not the one in rpccert " + cert},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.User, tc.cfg.Password, tc.cfg.Timeout = "u", "p", 5*time.Second
			c, err := NewClient(tc.cfg, testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.GetBestBlockHash(ctx)
			if !errors.Is(err, ErrTLS) || !IsPermanent(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want ErrTLS, permanent, saying %q", err, tc.want)
			}
		})
	}

	// A certificate file that cannot be read while the node serves TLS is
	// elsewhere: permanent (cfindexd stops at start), but read again at
	// the next try of a running daemon; one that is not a certificate
	// does not heal.
	missing := filepath.Join(t.TempDir(), "rpc.cert")
	c2, _ := NewClient(Config{Host: host(tlsSrv), User: "u", Password: "p", RPCCert: missing, Timeout: 5 * time.Second}, testLogger(t))
	defer c2.Close()
	if _, err := c2.GetBestBlockHash(ctx); !IsPermanent(err) || !strings.Contains(err.Error(), "point rpccert at it") {
		t.Fatalf("missing rpccert: %v", err)
	}
	raw, _ := os.ReadFile(cert)
	if err := os.WriteFile(missing, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.GetBestBlockHash(ctx); err != nil {
		t.Fatalf("rpccert written after the first try: %v", err)
	}
	garbage := filepath.Join(t.TempDir(), "rpc.cert")
	_ = os.WriteFile(garbage, []byte("not a certificate\n"), 0o600)
	c3, _ := NewClient(Config{Host: host(tlsSrv), User: "u", Password: "p", RPCCert: garbage, Timeout: 5 * time.Second}, testLogger(t))
	defer c3.Close()
	if _, err := c3.GetBestBlockHash(ctx); !IsPermanent(err) || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("garbage rpccert: %v", err)
	}
}

// A 503 names its cause: Core's shutdown body is a shutdown; its work
// queue body is the work queue; a bare 503 names both. All heal (they are
// ErrUnreachable, not permanent), over JSON-RPC and over REST; REST's
// warm-up 503 stays ErrWarmup.
func TestUnavailableNamesTheCause(t *testing.T) {
	for _, tc := range []struct {
		body, want string
	}{
		{"Request rejected during server shutdown", "the node is shutting down"},
		{"Work queue depth exceeded", "RPC work queue full (raise -rpcworkqueue)"},
		{"<html>503 Service Unavailable</html>", "RPC work queue full (raise -rpcworkqueue) or the node is shutting down"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, tc.body)
		}))
		c, err := NewClient(Config{Host: strings.TrimPrefix(srv.URL, "http://"), User: "u", Password: "p", Timeout: 5 * time.Second}, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		_, rpcErr := c.GetBestBlockHash(testCtx(t))
		_, restErr := c.RESTGet(testCtx(t), "/rest/block/"+someHash+".bin")
		for what, err := range map[string]error{"rpc": rpcErr, "rest": restErr} {
			if !errors.Is(err, ErrUnreachable) || IsPermanent(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s 503 %q: %v; want ErrUnreachable naming %q", what, tc.body, err, tc.want)
			}
		}
		c.Close()
		srv.Close()
	}
}

// Credentials: explicit ones the node rejects are permanent; a cookie the
// node rejects is not (the node rewrites it when it restarts).
func TestRejectedCredentialsPermanentUnlessCookie(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	explicit, _ := NewClient(Config{Host: host, User: "u", Password: "p"}, testLogger(t))
	defer explicit.Close()
	if _, err := explicit.GetBestBlockHash(testCtx(t)); !errors.Is(err, ErrAuth) || !IsPermanent(err) {
		t.Errorf("rpcuser rejected: %v; want ErrAuth, permanent", err)
	}
	cookie := filepath.Join(t.TempDir(), ".cookie")
	_ = os.WriteFile(cookie, []byte("__cookie__:x"), 0o600)
	byCookie, _ := NewClient(Config{Host: host, CookieFile: cookie}, testLogger(t))
	defer byCookie.Close()
	if _, err := byCookie.GetBestBlockHash(testCtx(t)); !errors.Is(err, ErrAuth) || IsPermanent(err) {
		t.Errorf("cookie rejected: %v; want ErrAuth, not permanent", err)
	}
}
