package httpapi

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcwallet/walletdb"
	_ "github.com/btcsuite/btcwallet/walletdb/bdb" // neutrino's header index backend
	"github.com/lightninglabs/neutrino/chainimport"
	"github.com/lightninglabs/neutrino/headerfs"

	"net/http/httptest"

	"github.com/cfindexd/cfindexd/internal/testtime"
)

// TestNeutrinoMetadata pins the 10-byte prefix of neutrino v0.18.0's
// chainimport format: magic (LE), version 0, header type, start (LE).
func TestNeutrinoMetadata(t *testing.T) {
	chain := synthChain(t, 30, 6)
	s := newTestServer(t, synthView(t, chain), Config{Net: chaincfg.RegressionNetParams.Net})
	h := s.Handler()
	tests := []struct {
		url    string
		prefix []byte
		size   int
		n      int
	}{
		{"/bulk/neutrino/blockheaders.bin", []byte{0xfa, 0xbf, 0xb5, 0xda, 0, 0, 0, 0, 0, 0}, 80, 31},
		{"/bulk/neutrino/filterheaders.bin", []byte{0xfa, 0xbf, 0xb5, 0xda, 0, 1, 0, 0, 0, 0}, 32, 31},
		{"/bulk/neutrino/blockheaders/7-9.bin", []byte{0xfa, 0xbf, 0xb5, 0xda, 0, 0, 7, 0, 0, 0}, 80, 3},
		{"/bulk/neutrino/filterheaders/0-0.bin", []byte{0xfa, 0xbf, 0xb5, 0xda, 0, 1, 0, 0, 0, 0}, 32, 1},
	}
	for _, tc := range tests {
		b := get200(t, h, tc.url)
		if len(b) != NeutrinoMetadataSize+tc.size*tc.n || !bytes.Equal(b[:NeutrinoMetadataSize], tc.prefix) {
			t.Errorf("%s: %d bytes, prefix %x", tc.url, len(b), b[:min(len(b), NeutrinoMetadataSize)])
		}
	}
	b := get200(t, h, "/bulk/neutrino/filterheaders/7-9.bin")
	if !bytes.Equal(b[NeutrinoMetadataSize:NeutrinoMetadataSize+32], chain[7].FilterHeader[:]) {
		t.Errorf("filter header 7 not in internal byte order")
	}
}

// TestNeutrinoImport feeds the served files to neutrino's own importer
// (chainimport over HTTP, validating regtest proof of work and the
// filter-header chain's genesis) and checks neutrino's header stores end
// at our tip, first with the whole-chain files, then extending a second
// store with a longer range file.
func TestNeutrinoImport(t *testing.T) {
	params := chaincfg.RegressionNetParams
	chain := synthChain(t, 2100, 7)
	s := newTestServer(t, synthView(t, chain), Config{Net: params.Net})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close) // after the parallel subtests
	tip := chain[len(chain)-1]

	// openStores opens (or reopens) neutrino's header stores in dir.
	openStores := func(t *testing.T, dir string) (walletdb.DB, headerfs.BlockHeaderStore, headerfs.FilterHeaderStore) {
		t.Helper()
		path := filepath.Join(dir, "neutrino.db")
		db, err := walletdb.Create("bdb", path, true, 10*time.Second, false)
		if err != nil {
			db, err = walletdb.Open("bdb", path, true, 10*time.Second, false)
		}
		if err != nil {
			t.Fatal(err)
		}
		bs, err := headerfs.NewBlockHeaderStore(dir, db, &params)
		if err != nil {
			t.Fatal(err)
		}
		fs, err := headerfs.NewFilterHeaderStore(dir, db, headerfs.RegularFilter, &params, nil)
		if err != nil {
			t.Fatal(err)
		}
		return db, bs, fs
	}
	importInto := func(t *testing.T, dir string, parts [][2]string) {
		t.Helper()
		for _, p := range parts {
			// Each import runs on freshly opened stores, as a wallet
			// restarting between downloads would.
			db, bs, fs := openStores(t, dir)
			imp, err := chainimport.NewHeadersImport(&chainimport.ImportOptions{
				TargetChainParams:       params,
				TargetBlockHeaderStore:  bs,
				TargetFilterHeaderStore: fs,
				BlockHeadersSource:      srv.URL + p[0],
				FilterHeadersSource:     srv.URL + p[1],
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(30*time.Second))
			_, err = imp.Import(ctx)
			cancel()
			db.Close()
			if err != nil {
				t.Fatalf("neutrino import of %s: %v", p[0], err)
			}
		}
		db, bs, fs := openStores(t, dir)
		defer db.Close()
		hdr, height, err := bs.ChainTip()
		if err != nil || height != tip.Height || hdr.BlockHash() != tip.Hash {
			t.Fatalf("neutrino block tip %d (%v), want %d %s", height, err, tip.Height, tip.Hash)
		}
		fh, fheight, err := fs.ChainTip()
		if err != nil || fheight != tip.Height || *fh != tip.FilterHeader {
			t.Fatalf("neutrino filter tip %d (%v), want %d %s", fheight, err, tip.Height, tip.FilterHeader)
		}
	}
	t.Run("whole", func(t *testing.T) {
		t.Parallel()
		importInto(t, t.TempDir(), [][2]string{{"/bulk/neutrino/blockheaders.bin", "/bulk/neutrino/filterheaders.bin"}})
	})
	t.Run("ranges", func(t *testing.T) {
		t.Parallel()
		importInto(t, t.TempDir(), [][2]string{
			{"/bulk/neutrino/blockheaders/0-1500.bin", "/bulk/neutrino/filterheaders/0-1500.bin"},
			// Neutrino v0.18.0 appends a file that starts above 0 from the
			// wrong offset (appendNewHeaders passes target heights where
			// the iterator wants file indexes) and silently adds nothing,
			// so a wallet extends with an overlapping file from 0.
			{"/bulk/neutrino/blockheaders/0-2100.bin", "/bulk/neutrino/filterheaders/0-2100.bin"},
		})
	})
}
