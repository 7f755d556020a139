package nodeclient

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/corefixture"
)

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func testLogger(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
}

// newFixtureClient starts a replay server and a cookie-auth client for it.
func newFixtureClient(t *testing.T, fx *corefixture.Fixtures, opts corefixture.Options) (*Client, *corefixture.Server) {
	t.Helper()
	srv := corefixture.NewServer(t, fx, opts)
	cfg := Config{Host: srv.Host(), CookieFile: srv.CookieFile(), Timeout: 5 * time.Second}
	if opts.User != "" {
		cfg = Config{Host: srv.Host(), User: opts.User, Password: opts.Password, Timeout: 5 * time.Second}
	}
	c, err := NewClient(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, srv
}

// expectedPrevScripts reads the recorded /rest/spenttxouts/<h>.json (or, for
// blocks without it, the prevouts in getblock 3 JSON) — an independent
// decoding of the same data, used as ground truth.
func expectedPrevScripts(t *testing.T, b *corefixture.Block) [][]byte {
	t.Helper()
	var out [][]byte
	if b.SpentJSON != nil {
		var txs [][]struct {
			ScriptPubKey struct {
				Hex string `json:"hex"`
			} `json:"scriptPubKey"`
		}
		if err := json.Unmarshal(b.SpentJSON, &txs); err != nil {
			t.Fatal(err)
		}
		for _, tx := range txs {
			for _, o := range tx {
				s, err := hex.DecodeString(o.ScriptPubKey.Hex)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, s)
			}
		}
		return out
	}
	var v struct {
		Tx []struct {
			Vin []struct {
				Prevout *struct {
					ScriptPubKey struct {
						Hex string `json:"hex"`
					} `json:"scriptPubKey"`
				} `json:"prevout"`
			} `json:"vin"`
		} `json:"tx"`
	}
	if err := json.Unmarshal(b.Verbose3, &v); err != nil {
		t.Fatal(err)
	}
	for _, tx := range v.Tx[1:] {
		for _, in := range tx.Vin {
			s, _ := hex.DecodeString(in.Prevout.ScriptPubKey.Hex)
			out = append(out, s)
		}
	}
	return out
}

func equalScripts(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
