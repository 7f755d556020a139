package nodeclient

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// maxCertFileSize bounds the rpccert file we read; btcd's rpc.cert is
// under 1 KiB.
const maxCertFileSize = 1 << 20

// errCertNotReadable means the rpccert file cannot be read. btcd writes
// rpc.cert before it serves TLS, so once it does the file is elsewhere.
var errCertNotReadable = errors.New("rpccert not readable")

// certPool trusts the certificates of one PEM file (btcd's rpc.cert, which
// is its own CA) for the node's RPC server. The file is read at the first
// TLS handshake and again whenever its size or modification time changes,
// so a certificate btcd regenerates is picked up without a restart. A file
// that cannot be read is a retryable error while btcd may not have
// written it yet, like a cookie; once btcd answers over TLS it has, so the
// file is elsewhere and the error permanent.
type certPool struct {
	path string

	mu      sync.Mutex
	modTime time.Time
	size    int64
	pool    *x509.CertPool
}

// load returns the pool for the file's current content.
func (p *certPool) load() (*x509.CertPool, error) {
	st, err := os.Stat(p.path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errCertNotReadable, p.path, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pool != nil && st.ModTime().Equal(p.modTime) && st.Size() == p.size {
		return p.pool, nil
	}
	if st.Size() > maxCertFileSize {
		return nil, permanent(fmt.Errorf("%w: rpccert %s is larger than %d bytes: not a certificate", ErrTLS, p.path, maxCertFileSize))
	}
	raw, err := os.ReadFile(p.path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errCertNotReadable, p.path, err)
	}
	pool, err := parseCertPEM(raw)
	if err != nil {
		return nil, permanent(fmt.Errorf("%w: rpccert %s: %v", ErrTLS, p.path, err))
	}
	p.pool, p.modTime, p.size = pool, st.ModTime(), st.Size()
	return pool, nil
}

// parseCertPEM returns a pool of every CERTIFICATE block in raw; it is an
// error if there is none.
func parseCertPEM(raw []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	n := 0
	for {
		var block *pem.Block
		block, raw = pem.Decode(raw)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("not a valid certificate: %v", err)
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 {
		return nil, errors.New("no PEM certificate in the file (want btcd's rpc.cert)")
	}
	return pool, nil
}

// tlsConfig returns the client TLS configuration that trusts only the
// certificates in p, checked against the host name or address dialled.
// Verification is done in VerifyConnection rather than through RootCAs so
// that the file is read lazily (see certPool).
func (p *certPool) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The standard verification is replaced, not skipped:
		// VerifyConnection below checks the chain and the name.
		InsecureSkipVerify: true, //nolint:gosec // verified in VerifyConnection
		VerifyConnection: func(cs tls.ConnectionState) error {
			if err := p.verify(cs); err != nil {
				return &handshakeError{err}
			}
			return nil
		},
	}
}

// handshakeError carries verify's error through the TLS and HTTP layers,
// so that transportError can report it without their prefixes.
type handshakeError struct{ err error }

func (e *handshakeError) Error() string { return e.err.Error() }
func (e *handshakeError) Unwrap() error { return e.err }

// verify checks the node's certificate chain against the rpccert file and
// the name dialled.
func (p *certPool) verify(cs tls.ConnectionState) error {
	pool, err := p.load()
	if errors.Is(err, errCertNotReadable) {
		return permanent(fmt.Errorf("%w: %w; the node already serves TLS, so its rpc.cert is elsewhere: point rpccert at it", ErrTLS, err))
	}
	if err != nil {
		return err
	}
	if len(cs.PeerCertificates) == 0 {
		return permanent(fmt.Errorf("%w: the node presented no certificate", ErrTLS))
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err = cs.PeerCertificates[0].Verify(x509.VerifyOptions{
		DNSName:       cs.ServerName,
		Roots:         pool,
		Intermediates: inter,
	})
	if err != nil {
		return permanent(fmt.Errorf("%w: the node's certificate is not the one in rpccert %s (%v); point rpccert at the rpc.cert of the btcd you connect to", ErrTLS, p.path, err))
	}
	return nil
}

// tlsMismatch recognises a plain-HTTP client talking to a TLS server, or
// the reverse, from what the transport saw, and returns the error that
// says what to change; nil when err and body show neither.
func (c *Client) tlsMismatch(err error, status int, body []byte) error {
	host := c.cfg.Host
	if c.cfg.RPCCert == "" {
		// Go's TLS server (btcd) answers a plain request with this 400;
		// other TLS servers answer with a TLS alert record, which the
		// HTTP client reports as a malformed response.
		plainToTLS := status == 400 && bytes.Contains(body, []byte("HTTP request to an HTTPS server"))
		if err != nil {
			msg := err.Error()
			plainToTLS = plainToTLS || strings.Contains(msg, "malformed HTTP response") && strings.Contains(msg, `\x15\x03`)
		}
		if plainToTLS {
			return permanent(fmt.Errorf("%w: node at %s speaks TLS (btcd's default): set rpccert = <btcd datadir>/rpc.cert, or start btcd with --notls", ErrTLS, host))
		}
		return nil
	}
	var rec tls.RecordHeaderError
	if err != nil && (errors.As(err, &rec) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")) {
		return permanent(fmt.Errorf("%w: node at %s speaks plain HTTP, not TLS: remove rpccert (btcd runs with --notls, or this is Bitcoin Core)", ErrTLS, host))
	}
	return nil
}
