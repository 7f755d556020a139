package main

import (
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/corefixture"
	"github.com/cfindexd/cfindexd/internal/tcptest"
)

// coreArgs point cfindexd at a replay of the recorded Bitcoin Core v31 node,
// with cookie authentication as Core defaults to.
func coreArgs(srv *corefixture.Server, datadir string) []string {
	host, port, _ := net.SplitHostPort(srv.Host())
	return []string{
		"--chain=regtest", "--datadir=" + datadir,
		"--rpcconnect=" + host, "--rpcport=" + port,
		"--bitcoindatadir=" + srv.DataDir(), // the cookie is found as <datadir>/regtest/.cookie
		"--listen=",
	}
}

// TestDaemonAgainstRecordedCore runs the real daemon against the recorded
// Core v31 node: it must find the cookie, choose the REST prevout source,
// index the whole recorded chain, and serve /rest/blockfilter with the very
// bytes Core served for the same blocks.
func TestDaemonAgainstRecordedCore(t *testing.T) {
	fx := corefixture.Load(t)
	srv := corefixture.NewServer(t, fx, corefixture.Options{})
	httpAddr := tcptest.FreeAddr(t)
	d := startDaemon(t, append(coreArgs(srv, t.TempDir()), "--httplisten="+httpAddr)...)
	d.waitLog(10*time.Second, func(m map[string]any) bool {
		s, _ := m["mode"].(string)
		return strings.Contains(s, "rest")
	})
	d.waitLog(20*time.Second, heightAtLeast(115))

	recorded, err := filepath.Glob(filepath.Join(fx.Dir, "rest", "blocks", "*.blockfilter-basic.bin"))
	if err != nil || len(recorded) < 10 {
		t.Fatalf("recorded blockfilter files: %d, %v", len(recorded), err)
	}
	for _, path := range recorded {
		if strings.Contains(path, "-stale-") {
			continue // this replay presents only the final chain; the indexer's fixture test covers stale blocks
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// The block hash sits in the serialized BlockFilter after the type byte.
		var hash [32]byte
		copy(hash[:], want[1:33])
		for i, j := 0, 31; i < j; i, j = i+1, j-1 {
			hash[i], hash[j] = hash[j], hash[i]
		}
		url := "http://" + httpAddr + "/rest/blockfilter/basic/" + hex.EncodeToString(hash[:]) + ".bin"
		status, _, body := get(t, url, nil)
		if status != 200 || string(body) != string(want) {
			t.Errorf("%s: %d, %d bytes; Core served %d bytes", filepath.Base(path), status, len(body), len(want))
		}
	}
	if code, _ := d.terminate(10 * time.Second); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
}

// TestDaemonRefusesPrunedNode starts a fresh store against a node that has
// pruned blocks the store needs: one line, non-zero exit, no retry loop.
func TestDaemonRefusesPrunedNode(t *testing.T) {
	fx := corefixture.Load(t)
	srv := corefixture.NewServer(t, fx, corefixture.Options{PrunedBelow: 50})
	d := startDaemon(t, append(coreArgs(srv, t.TempDir()), "--httplisten=")...)
	code, last := d.wait(20 * time.Second)
	if code == 0 || !strings.Contains(last, "pruned blocks below height 50") || !strings.Contains(last, "-prune") {
		t.Fatalf("exit %d, last line %q", code, last)
	}
}
