package nodeclient

import (
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/corefixture"
	"github.com/cfindexd/cfindexd/internal/nodetest"
)

// newFixtureClient starts a replay server and a cookie-auth client for it.
func newFixtureClient(t *testing.T, fx *corefixture.Fixtures, opts corefixture.Options) (*Client, *corefixture.Server) {
	t.Helper()
	srv := corefixture.NewServer(t, fx, opts)
	cfg := Config{Host: srv.Host(), CookieFile: srv.CookieFile(), Timeout: 5 * time.Second}
	if opts.User != "" {
		cfg = Config{Host: srv.Host(), User: opts.User, Password: opts.Password, Timeout: 5 * time.Second}
	}
	c, err := NewClient(cfg, nodetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, srv
}
