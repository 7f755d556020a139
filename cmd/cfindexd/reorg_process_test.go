package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/tcptest"
)

// TestDaemonStopsWhenNodeChainVanishes is the operator's path of a btcd
// --regtest node restarted under a running cfindexd: the node is down
// (/readyz 503 naming the node, node_up 0), comes back with its chain
// wiped (cfindexd waits for it, the index intact), then mines a new chain
// from genesis: cfindexd stops, exit code 1, with one line that says what
// happened and how to go on, and the store keeps every indexed block.
func TestDaemonStopsWhenNodeChainVanishes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{Net: "regtest", TxIndex: true})
	if _, err := node.Generate(ctx, 30); err != nil {
		t.Fatal(err)
	}
	datadir := t.TempDir()
	httpAddr := tcptest.FreeAddr(t)
	base := "http://" + httpAddr
	d := startDaemon(t, append(nodeArgs(node, "regtest", datadir), "--pollinterval=100ms", "--httplisten="+httpAddr)...)
	d.waitLog(60*time.Second, heightAtLeast(30))
	waitHTTP(t, base+"/readyz", 200, `"ready":true`)
	waitHTTP(t, base+"/metrics", 200, "cfindexd_node_up 1")

	if err := node.Stop(); err != nil {
		t.Fatal(err)
	}
	waitHTTP(t, base+"/readyz", 503, `"reason":"node unreachable: `)
	waitHTTP(t, base+"/metrics", 200, "cfindexd_node_up 0")

	node.Restart(t) // btcd --regtest starts an empty chain
	d.waitLog(60*time.Second, func(m map[string]any) bool {
		msg, _ := m["message"].(string)
		return m["level"] == "warn" && strings.HasPrefix(msg, "the node's tip is an indexed block far below the indexed tip")
	})
	waitHTTP(t, base+"/metrics", 200, "cfindexd_node_up 1")
	if _, err := node.Generate(ctx, 2); err != nil {
		t.Fatal(err)
	}
	code, last := d.wait(60 * time.Second)
	if code != 1 {
		t.Fatalf("exit code %d, want 1; last line %q", code, last)
	}
	for _, want := range []string{"cfindexd: ", "shares only the genesis block", "height 0, 30 blocks below the indexed tip", "--regtest", "--reindex", "allowdeepreorg = true"} {
		if !strings.Contains(last, want) {
			t.Errorf("last line %q does not say %q", last, want)
		}
	}
	st := openStoreAfterExit(t, datadir, "regtest", node.Params())
	if tip, ok := st.Tip(); !ok || tip.Height != 30 {
		t.Fatalf("store tip %d (%v) after the refused reorg, want the 30 indexed blocks", tip.Height, ok)
	}
}
