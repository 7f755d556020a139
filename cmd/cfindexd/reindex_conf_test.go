package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"

	"github.com/cfindexd/cfindexd/internal/tcptest"
	"github.com/cfindexd/cfindexd/store"
)

// TestReindexWithConfigFile: --reindex works however the configuration
// arrives — the default <datadir>/cfindexd.toml, and --conf (the only flag
// the systemd unit passes) — even while the node is down: the store named
// by the file's chain is moved aside before the "starting" line, which
// names the file read.
func TestReindexWithConfigFile(t *testing.T) {
	params := &chaincfg.RegressionNetParams
	_, port, err := net.SplitHostPort(tcptest.RefusedAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		// args builds the command line from the datadir and the file.
		args        func(datadir, conf string) []string
		confInDir   bool
		datadirLine bool
	}{
		{"default file in the datadir", func(datadir, _ string) []string {
			return []string{"--datadir=" + datadir, "--reindex"}
		}, true, false},
		{"--conf, datadir in the file", func(_, conf string) []string {
			return []string{"--reindex", "--conf=" + conf}
		}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			datadir := t.TempDir()
			conf := filepath.Join(t.TempDir(), "elsewhere.toml")
			if tc.confInDir {
				conf = filepath.Join(datadir, defaultConfigName)
			}
			body := fmt.Sprintf("chain = \"regtest\"\nrpcconnect = \"127.0.0.1\"\nrpcport = %s\nrpcuser = \"u\"\nrpcpassword = \"p\"\nlisten = \"\"\nhttplisten = \"\"\n", port)
			if tc.datadirLine {
				body += fmt.Sprintf("datadir = %q\n", datadir)
			}
			if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(datadir, "regtest", storeFileName)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			st, err := store.Open(path, *params.GenesisHash, store.Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			st.Close()

			d := startDaemon(t, tc.args(datadir, conf)...)
			d.waitLog(30*time.Second, msgIs("reindex: kept the old store as a backup (delete it once the rebuild is done); rebuilding from the node"))
			start := d.waitLog(30*time.Second, msgIs("starting"))
			if start["config"] != conf || start["store"] != path {
				t.Errorf("starting line: config %v, store %v; want %s, %s", start["config"], start["store"], conf, path)
			}
			if code, _ := d.terminate(30 * time.Second); code != 0 {
				t.Fatalf("SIGTERM: exit %d", code)
			}
			backups, _ := filepath.Glob(path + reindexBackupInfix + "*")
			if len(backups) != 1 {
				t.Fatalf("backups %v, want one", backups)
			}
		})
	}
}
