package bitcoind

import (
	"container/list"
	"sync"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// DefaultScriptCacheBytes bounds the txindex source's cache of output
// scripts. Most spends are of recent outputs, so a few tens of megabytes
// (a few hundred thousand transactions) save most getrawtransaction calls.
const DefaultScriptCacheBytes = 64 << 20

// cacheEntryOverhead approximates the per-entry cost beyond the script
// bytes (map entry, list element, slice headers).
const cacheEntryOverhead = 160

// scriptCache is an LRU of txid → output scripts, bounded by an estimate of
// its memory use. Safe for concurrent use.
type scriptCache struct {
	mu       sync.Mutex
	maxBytes int
	bytes    int
	order    *list.List // front = most recently used; values are *cacheEntry
	entries  map[chainhash.Hash]*list.Element
}

type cacheEntry struct {
	txid    chainhash.Hash
	scripts [][]byte // nil for OP_RETURN outputs (never spent)
	size    int
}

func newScriptCache(maxBytes int) *scriptCache {
	return &scriptCache{maxBytes: maxBytes, order: list.New(), entries: make(map[chainhash.Hash]*list.Element)}
}

// get returns the script of output vout of txid.
func (c *scriptCache) get(txid chainhash.Hash, vout uint32) (script []byte, found, inRange bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[txid]
	if !ok {
		return nil, false, false
	}
	c.order.MoveToFront(el)
	e := el.Value.(*cacheEntry)
	if int(vout) >= len(e.scripts) {
		return nil, true, false
	}
	return e.scripts[vout], true, true
}

func (c *scriptCache) has(txid chainhash.Hash) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.entries[txid]
	return ok
}

// add copies tx's output scripts into one allocation (so the cache does not
// pin the transaction's signatures and witnesses) and inserts them.
func (c *scriptCache) add(txid chainhash.Hash, tx *wire.MsgTx) {
	if c.maxBytes <= 0 {
		return
	}
	total := 0
	for _, out := range tx.TxOut {
		if !isOpReturn(out.PkScript) {
			total += len(out.PkScript)
		}
	}
	arena := make([]byte, 0, total)
	scripts := make([][]byte, len(tx.TxOut))
	for i, out := range tx.TxOut {
		if isOpReturn(out.PkScript) {
			continue
		}
		start := len(arena)
		arena = append(arena, out.PkScript...)
		scripts[i] = arena[start:len(arena):len(arena)]
	}
	e := &cacheEntry{txid: txid, scripts: scripts, size: total + 24*len(scripts) + cacheEntryOverhead}
	if e.size > c.maxBytes {
		return
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[txid]; ok {
		c.order.MoveToFront(el)
		return
	}
	c.entries[txid] = c.order.PushFront(e)
	c.bytes += e.size
	for c.bytes > c.maxBytes {
		last := c.order.Back()
		old := last.Value.(*cacheEntry)
		c.order.Remove(last)
		delete(c.entries, old.txid)
		c.bytes -= old.size
	}
}

func (c *scriptCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

func isOpReturn(script []byte) bool {
	return len(script) > 0 && script[0] == 0x6a
}
