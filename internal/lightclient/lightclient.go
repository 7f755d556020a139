// Package lightclient starts a real neutrino v0.18.0 light client whose only
// peer is one address (a cfindexd), for tests and the regtest demo, and
// captures its log for tests (CaptureLog).
//
// Neutrino keeps some settings in package-level variables (DNS seeding, its
// logger); Start turns DNS seeding off, so the client connects to nothing
// but the peer it is given. It must not be used outside tests, benchmarks
// and the demo.
package lightclient

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcwallet/walletdb"
	_ "github.com/btcsuite/btcwallet/walletdb/bdb" // neutrino's database driver
	"github.com/lightninglabs/neutrino"
)

// Client is a running neutrino ChainService with its own database.
type Client struct {
	*neutrino.ChainService
	db walletdb.DB
}

// Start creates a fresh neutrino database in dir (neutrino bans peers in
// its database, so every client starts clean) and starts a ChainService
// that connects to peer and nothing else.
func Start(ctx context.Context, dir string, params *chaincfg.Params, peer string) (*Client, error) {
	return StartImporting(ctx, dir, params, peer, nil)
}

// StartImporting is Start with neutrino's header import (chainimport) from
// imp's block- and filter-header sources, which ChainService.Start runs
// before it connects to the peer; nil imports nothing.
func StartImporting(ctx context.Context, dir string, params *chaincfg.Params, peer string, imp *neutrino.HeadersImportConfig) (*Client, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("neutrino dir: %w", err)
	}
	neutrino.DisableDNSSeed = true
	db, err := walletdb.Create("bdb", filepath.Join(dir, "neutrino.db"), true, 10*time.Second, false)
	if err != nil {
		return nil, fmt.Errorf("neutrino database: %w", err)
	}
	cs, err := neutrino.NewChainService(neutrino.Config{
		DataDir:       dir,
		Database:      db,
		ChainParams:   *params,
		ConnectPeers:  []string{peer},
		HeadersImport: imp,
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("neutrino: %w", err)
	}
	c := &Client{ChainService: cs, db: db}
	if err := cs.Start(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("start neutrino: %w", err)
	}
	return c, nil
}

// Close stops the client and closes its database.
func (c *Client) Close() {
	_ = c.ChainService.Stop()
	_ = c.db.Close()
}
