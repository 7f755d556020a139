package prevouts

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// The cache returns each cached output's script, reports outputs beyond a
// transaction's as out of range and unknown transactions as not found,
// and keeps OP_RETURN outputs (never spendable) as empty scripts.
func TestScriptCacheGet(t *testing.T) {
	c := newScriptCache(1 << 20)
	outs := [][]byte{{0x51}, {}, {0x6a, 0x01, 0x02}, bytes.Repeat([]byte{0xab}, 300)}
	c.add(chainhash.Hash{1}, outs)
	want := [][]byte{{0x51}, {}, {}, outs[3]}
	for vout, w := range want {
		got, found, inRange := c.get(chainhash.Hash{1}, uint32(vout))
		if !found || !inRange || !bytes.Equal(got, w) {
			t.Fatalf("vout %d: %x %v %v, want %x", vout, got, found, inRange, w)
		}
	}
	if _, found, inRange := c.get(chainhash.Hash{1}, 4); !found || inRange {
		t.Fatalf("vout 4: found %v inRange %v, want found and out of range", found, inRange)
	}
	if _, found, _ := c.get(chainhash.Hash{2}, 0); found {
		t.Fatal("unknown transaction found")
	}
	// A returned script cannot be extended into its neighbour.
	got, _, _ := c.get(chainhash.Hash{1}, 0)
	if cap(got) != len(got) {
		t.Fatalf("script has spare capacity %d", cap(got)-len(got))
	}
}

// Under a byte budget the cache stays within it, keeps the most recent
// transactions, and keeps one that is looked up again and again however
// many others pass through.
func TestScriptCacheBoundedKeepsRecentAndHot(t *testing.T) {
	const budget = 64 << 10
	c := newScriptCache(budget)
	rng := rand.New(rand.NewPCG(1, 2))
	script := func(i int) []byte { return []byte(fmt.Sprintf("script-%d-%d", i, rng.IntN(1000))) }
	hot := chainhash.Hash{0xff}
	c.add(hot, [][]byte{[]byte("hot")})
	var last []chainhash.Hash
	for i := range 20000 {
		id := chainhash.Hash{byte(i), byte(i >> 8), byte(i >> 16)}
		c.add(id, [][]byte{script(i), script(i)})
		last = append(last, id)
		if i%100 == 0 {
			if got, found, _ := c.get(hot, 0); !found || string(got) != "hot" {
				t.Fatalf("after %d transactions the hot one is gone", i)
			}
		}
		c.mu.Lock()
		used := c.cur.bytes + c.old.bytes
		c.mu.Unlock()
		if used > budget {
			t.Fatalf("after %d transactions %d bytes cached, budget %d", i, used, budget)
		}
	}
	for _, id := range last[len(last)-100:] {
		if !c.has(id) {
			t.Fatalf("recent transaction %s evicted", id)
		}
	}
	if c.has(last[0]) {
		t.Fatal("the oldest transaction is still cached")
	}
	// About 120 bytes per transaction: between half the budget and all of it.
	if n := c.len(); n < 250 || n > 550 {
		t.Fatalf("%d transactions cached in %d bytes", n, budget)
	}
}

// A transaction too big for half the budget is not cached; an unbounded
// (run-local) cache keeps everything.
func TestScriptCacheSizes(t *testing.T) {
	c := newScriptCache(1000)
	c.add(chainhash.Hash{1}, [][]byte{make([]byte, 600)})
	if c.has(chainhash.Hash{1}) {
		t.Fatal("a transaction bigger than half the budget was cached")
	}
	u := newScriptCache(0)
	for i := range 1000 {
		u.add(chainhash.Hash{byte(i), byte(i >> 8)}, [][]byte{make([]byte, 1000)})
	}
	if u.len() != 1000 {
		t.Fatalf("unbounded cache holds %d of 1000", u.len())
	}
}

// has reports whether txid is cached (and, as any look-up, keeps it).
func (c *scriptCache) has(txid chainhash.Hash) bool {
	_, found, _ := c.get(txid, 0)
	return found
}

// len returns the number of cached transactions.
func (c *scriptCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cur.index) + len(c.old.index)
}

// The budget bounds the cache's real heap, map and slabs included: after
// many generations of small entries (the worst case for per-entry
// overhead) the live heap it holds stays within it.
func TestScriptCacheHeapWithinBudget(t *testing.T) {
	const budget = 16 << 20
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c := newScriptCache(budget)
	script := make([]byte, 22) // P2WPKH
	for i := range 1_000_000 {
		c.add(chainhash.Hash{byte(i), byte(i >> 8), byte(i >> 16), 0xcc}, [][]byte{script, script})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if held > budget {
		t.Fatalf("cache of %d MiB holds %.1f MB of heap (%d transactions)", budget>>20, float64(held)/1e6, c.len())
	}
	t.Logf("cache of %d MiB holds %.1f MB of heap (%d transactions)", budget>>20, float64(held)/1e6, c.len())
	runtime.KeepAlive(c)
}

// get returns the script of output vout of txid; found is false when txid
// is not cached, inRange false when it has fewer outputs.
func (c *scriptCache) get(txid chainhash.Hash, vout uint32) (script []byte, found, inRange bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lookup(&txid)
	if !ok {
		return nil, false, false
	}
	script, inRange = entryScript(e, vout)
	return script, true, inRange
}
