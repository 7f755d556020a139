package bitcoind

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// DefaultScriptCacheBytes bounds the txindex source's cache of output
// scripts. Most spends are of recent outputs, so a few tens of megabytes
// (a few hundred thousand transactions) save most getrawtransaction calls.
const DefaultScriptCacheBytes = 64 << 20

// Cache layout constants.
const (
	// cacheEntryOverhead approximates the per-transaction cost beyond the
	// packed scripts: the map's 32-byte key and 24-byte value in a table
	// that is between half and seven eighths full, and slab ends.
	// TestScriptCacheHeapWithinBudget holds the estimate to the heap.
	cacheEntryOverhead = 128
	// cacheSlabBytes is the size of the slabs entries are packed into.
	cacheSlabBytes = 256 << 10
)

// scriptCache maps txid → the output scripts of that transaction, bounded
// by an estimate of its memory use. It keeps two generations: new entries
// go into the current one; when it holds half the budget, the previous
// generation is dropped whole and the current one takes its place. An
// entry found in the previous generation moves to the current one, so what
// is spent again and again stays, as with an LRU, without a list node and
// an allocation per transaction: entries are packed back to back into
// 256 KiB slabs. Safe for concurrent use.
type scriptCache struct {
	mu       sync.Mutex
	maxBytes int // <= 0: unbounded (a run-local cache)
	cur, old generation
}

// generation is one half of a scriptCache.
type generation struct {
	entries map[chainhash.Hash][]byte // packed entries (entryScript)
	slab    []byte                    // free space of the newest slab
	bytes   int
}

func newScriptCache(maxBytes int) *scriptCache {
	return &scriptCache{maxBytes: maxBytes, cur: generation{entries: make(map[chainhash.Hash][]byte)}}
}

// An entry packs a transaction's output scripts as the output count n
// (uint32), n end offsets (uint32, relative to the scripts) and the
// scripts back to back. OP_RETURN outputs, which can never be spent, are
// kept as empty scripts.

// entryScript returns the script of output vout of a packed entry.
func entryScript(e []byte, vout uint32) (script []byte, inRange bool) {
	n := binary.LittleEndian.Uint32(e)
	if vout >= n {
		return nil, false
	}
	data := e[4+4*n:]
	start := uint32(0)
	if vout > 0 {
		start = binary.LittleEndian.Uint32(e[4+4*(vout-1):])
	}
	end := binary.LittleEndian.Uint32(e[4+4*vout:])
	return data[start:end:end], true
}

// lookup finds txid's entry, moving it to the current generation if it
// was in the previous one. c.mu must be held.
func (c *scriptCache) lookup(txid chainhash.Hash) ([]byte, bool) {
	if e, ok := c.cur.entries[txid]; ok {
		return e, true
	}
	e, ok := c.old.entries[txid]
	if !ok {
		return nil, false
	}
	delete(c.old.entries, txid)
	c.old.bytes -= len(e) + cacheEntryOverhead
	// Copy it: the old generation's slabs are about to be dropped.
	c.put(txid, len(e), func(dst []byte) { copy(dst, e) })
	return c.cur.entries[txid], true
}

// addBlock caches the output scripts of every transaction of b.
func (c *scriptCache) addBlock(b *scannedBlock) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range b.txids {
		c.addLocked(b.txids[i], b.txOuts(i))
	}
}

// add caches the output scripts of the transaction txid.
func (c *scriptCache) add(txid chainhash.Hash, outs [][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addLocked(txid, outs)
}

func (c *scriptCache) addLocked(txid chainhash.Hash, outs [][]byte) {
	if _, ok := c.cur.entries[txid]; ok {
		return
	}
	size := 4 + 4*len(outs)
	for _, s := range outs {
		if !isOpReturn(s) {
			size += len(s)
		}
	}
	if c.maxBytes > 0 && size+cacheEntryOverhead > c.maxBytes/2 {
		return
	}
	c.put(txid, size, func(dst []byte) {
		binary.LittleEndian.PutUint32(dst, uint32(len(outs)))
		data := dst[4+4*len(outs):]
		end := 0
		for i, s := range outs {
			if !isOpReturn(s) {
				end += copy(data[end:], s)
			}
			binary.LittleEndian.PutUint32(dst[4+4*i:], uint32(end))
		}
	})
}

// put stores an entry of size bytes, written by fill, under txid in the
// current generation, rotating generations first if it is full. c.mu
// must be held.
func (c *scriptCache) put(txid chainhash.Hash, size int, fill func(dst []byte)) {
	if c.maxBytes > 0 && c.cur.bytes+size+cacheEntryOverhead > c.maxBytes/2 {
		c.old = c.cur
		c.cur = generation{entries: make(map[chainhash.Hash][]byte, len(c.old.entries))}
	}
	if len(c.cur.slab) < size {
		c.cur.slab = make([]byte, max(size, cacheSlabBytes))
	}
	dst := c.cur.slab[:size:size]
	c.cur.slab = c.cur.slab[size:]
	fill(dst)
	c.cur.entries[txid] = dst
	c.cur.bytes += size + cacheEntryOverhead
}

// resolve fills prev[i] with the script spends[i] spends where the cache
// has it and appends a spendRef (block bi) for each one it lacks. An
// outpoint beyond a cached transaction's outputs is an error.
func (c *scriptCache) resolve(spends []wire.OutPoint, prev [][]byte, bi int, refs []spendRef) ([]spendRef, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, op := range spends {
		e, ok := c.lookup(op.Hash)
		if !ok {
			refs = append(refs, spendRef{block: bi, slot: i, op: op})
			continue
		}
		script, inRange := entryScript(e, op.Index)
		if !inRange {
			return refs, fmt.Errorf("input %d spends %s beyond the transaction's outputs", i, op)
		}
		prev[i] = script
	}
	return refs, nil
}

func isOpReturn(script []byte) bool {
	return len(script) > 0 && script[0] == 0x6a
}
