package indexer

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"
)

// countingFake is a BlockSource whose prevout counts the test sets.
type countingFake struct{ cache, node uint64 }

func (c *countingFake) FetchBlock(context.Context, chainhash.Hash) (*wire.MsgBlock, [][]byte, error) {
	return nil, nil, nil
}
func (c *countingFake) Mode() string                    { return "fake" }
func (c *countingFake) PrevoutCounts() (uint64, uint64) { return c.cache, c.node }

// Progress lines carry height, node height, rates and ETA, and for a source
// that counts its spent scripts the cache's share over the interval only.
func TestProgressLines(t *testing.T) {
	var buf bytes.Buffer
	log := zerolog.New(&buf)
	src := &countingFake{cache: 1000, node: 1000} // before the catch-up
	p := newProgress(log, time.Nanosecond, 0, 100, src)
	src.cache, src.node = 1030, 1010
	p.add(50, 5000, 700, 50)
	src.cache, src.node = 1030, 1020
	p.add(50, 5000, 700, 100)

	var lines []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 3 || lines[0]["from"] != 0.0 || lines[0]["to"] != 100.0 {
		t.Fatalf("lines %v", lines)
	}
	first, last := lines[1], lines[2]
	if first["height"] != 50.0 || first["node_height"] != 100.0 || first["blocks_per_s"].(float64) <= 0 || first["eta"] == nil {
		t.Errorf("first line %v", first)
	}
	if eta, ok := first["eta"].(string); !ok || eta == "" || strings.Trim(eta, "0123456789") == "" {
		t.Errorf("eta %v: want a duration with its unit", first["eta"])
	}
	// The last line ends the catch-up with its totals: every block, and
	// the cache's share over the whole catch-up (30 of 50).
	if last["message"] != "caught up" || last["height"] != 100.0 || last["blocks"] != 100.0 || last["elapsed"] == nil || last["blocks_per_s"] == nil {
		t.Errorf("last line %v: want caught up with totals", last)
	}
	if first["prevout_cache_pct"] != 75.0 || last["prevout_cache_pct"] != 60.0 {
		t.Errorf("cache shares %v and %v, want 75 and 60", first["prevout_cache_pct"], last["prevout_cache_pct"])
	}
	if _, ok := last["eta"]; ok {
		t.Errorf("ETA at the tip: %v", last)
	}

	buf.Reset()
	newProgress(log, time.Nanosecond, 0, 10, fakeSourceWithoutCounts{}).add(10, 100, 10, 10)
	if bytes.Contains(buf.Bytes(), []byte("prevout_cache_pct")) {
		t.Errorf("share logged for a source without counts: %s", buf.String())
	}
}

type fakeSourceWithoutCounts struct{}

func (fakeSourceWithoutCounts) FetchBlock(context.Context, chainhash.Hash) (*wire.MsgBlock, [][]byte, error) {
	return nil, nil, nil
}
func (fakeSourceWithoutCounts) Mode() string { return "fake" }
