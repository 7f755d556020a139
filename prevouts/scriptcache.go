package prevouts

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// DefaultScriptCacheBytes bounds the txindex source's cache of output
// scripts. Most spends are of recent outputs, so a few tens of megabytes
// (about half a million transactions) save most getrawtransaction calls.
const DefaultScriptCacheBytes = 64 << 20

// Cache layout constants.
const (
	// cacheIndexOverhead approximates what one transaction costs in a
	// generation's index: a map entry of an 8-byte key and a 4-byte value
	// in a Swiss table whose groups are between 7/16 and 7/8 full (17 bytes
	// a slot: 19 to 39 bytes an entry).
	// TestScriptCacheHeapWithinBudget holds the estimate to the heap.
	cacheIndexOverhead = 40
	// cacheSlabBytes is the size of the slabs entries are packed into;
	// cacheSlabShift its log2. An entry's place in a generation is
	// slab<<cacheSlabShift | offset/cacheAlign, in 32 bits.
	cacheSlabShift = 21
	cacheSlabBytes = 1 << cacheSlabShift
	// cacheAlign aligns entries so a 32-bit place reaches 16,384 slabs
	// (32 GiB) per generation.
	cacheAlign = 8
	// runCacheSlabBytes is the slab size of a run-local cache (no
	// budget), which holds one run's blocks.
	runCacheSlabBytes = 256 << 10
)

// scriptCache maps txid → the output scripts of that transaction, bounded
// by its real memory: packed entries and the index. It keeps two
// generations: new entries go into the current one; when it holds half the
// budget, the previous generation is dropped whole and the current one
// takes its place. An entry found in the previous generation moves to the
// current one, so what is spent again and again stays, as with an LRU,
// without a list node and an allocation per transaction.
//
// Per transaction it costs the entry — the txid, the output count, an end
// offset per output and the scripts back to back, OP_RETURN outputs (never
// spendable) kept empty — in 2 MiB slabs, plus up to 40 bytes of index: a map
// from the txid's first 8 bytes to the entry's place, whose keys and
// values hold no pointers, so the garbage collector never scans it. The
// entry keeps the whole txid; a look-up whose txid differs (another
// transaction with the same first 8 bytes) is a miss, and the node is
// asked. Safe for concurrent use.
type scriptCache struct {
	mu       sync.Mutex
	maxBytes int // <= 0: unbounded (a run-local cache)
	// slabBytes is the size of the slabs: cacheSlabBytes, less for a
	// small budget or a run-local cache.
	slabBytes int
	cur, old  generation
}

// generation is one half of a scriptCache.
type generation struct {
	index map[uint64]uint32 // txid prefix → place (slab, aligned offset)
	slabs [][]byte
	free  int // bytes used in the last slab
	// bytes counts the generation's memory: whole slabs, and the index.
	bytes int
}

func newScriptCache(maxBytes int) *scriptCache {
	slab := runCacheSlabBytes
	if maxBytes > 0 {
		slab = min(cacheSlabBytes, max(4096, alignUp(maxBytes/16)))
	}
	return &scriptCache{maxBytes: maxBytes, slabBytes: slab, cur: generation{index: make(map[uint64]uint32)}}
}

// An entry is the txid (32 bytes), the output count n (uint32), n end
// offsets (uint32, relative to the scripts) and the scripts back to back.
const entryHeader = chainhash.HashSize + 4

// entryScript returns the script of output vout of a packed entry.
func entryScript(e []byte, vout uint32) (script []byte, inRange bool) {
	n := binary.LittleEndian.Uint32(e[chainhash.HashSize:])
	if vout >= n {
		return nil, false
	}
	offs := e[entryHeader:]
	data := offs[4*n:]
	start := uint32(0)
	if vout > 0 {
		start = binary.LittleEndian.Uint32(offs[4*(vout-1):])
	}
	end := binary.LittleEndian.Uint32(offs[4*vout:])
	return data[start:end:end], true
}

// entrySize is the length of the entry starting at e.
func entrySize(e []byte) int {
	n := binary.LittleEndian.Uint32(e[chainhash.HashSize:])
	if n == 0 {
		return entryHeader
	}
	return entryHeader + 4*int(n) + int(binary.LittleEndian.Uint32(e[entryHeader+4*(n-1):]))
}

// txidKey is the index key of txid.
func txidKey(txid *chainhash.Hash) uint64 { return binary.LittleEndian.Uint64(txid[:8]) }

// find returns txid's entry in g.
func (g *generation) find(txid *chainhash.Hash) ([]byte, bool) {
	place, ok := g.index[txidKey(txid)]
	if !ok {
		return nil, false
	}
	slab := g.slabs[place>>(cacheSlabShift-3)]
	e := slab[int(place&(1<<(cacheSlabShift-3)-1))*cacheAlign:]
	if !bytes.Equal(e[:chainhash.HashSize], txid[:]) {
		return nil, false // another transaction with the same prefix
	}
	return e[:entrySize(e)], true
}

// lookup finds txid's entry, moving it to the current generation if it
// was in the previous one. c.mu must be held.
func (c *scriptCache) lookup(txid *chainhash.Hash) ([]byte, bool) {
	if e, ok := c.cur.find(txid); ok {
		return e, true
	}
	e, ok := c.old.find(txid)
	if !ok {
		return nil, false
	}
	// Its slab space and index slot stay counted until the old
	// generation goes. Copy it: the old generation's slabs are about to be dropped.
	return c.put(txidKey(txid), len(e), func(dst []byte) { copy(dst, e) }), true
}

// addBlock caches the output scripts of every transaction of b.
func (c *scriptCache) addBlock(b *wirescan.ScannedBlock) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range b.Txids {
		c.addLocked(&b.Txids[i], b.TxOuts(i))
	}
}

// add caches the output scripts of the transaction txid.
func (c *scriptCache) add(txid chainhash.Hash, outs [][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addLocked(&txid, outs)
}

func (c *scriptCache) addLocked(txid *chainhash.Hash, outs [][]byte) []byte {
	if e, ok := c.cur.find(txid); ok {
		return e
	}
	size := entrySizeOf(outs)
	if size > c.slabBytes || c.maxBytes > 0 && c.slabBytes+cacheIndexOverhead > c.maxBytes/2 {
		return nil
	}
	return c.put(txidKey(txid), size, func(dst []byte) { packEntry(dst, txid, outs) })
}

// store caches the output scripts of txid, as add does, and returns its
// entry (for entryScript): the cached one, or, for a transaction too big
// to cache, a copy of its own.
func (c *scriptCache) store(txid chainhash.Hash, outs [][]byte) []byte {
	c.mu.Lock()
	e := c.addLocked(&txid, outs)
	c.mu.Unlock()
	if e == nil {
		e = make([]byte, entrySizeOf(outs))
		packEntry(e, &txid, outs)
	}
	return e
}

// entrySizeOf is the size of the entry of a transaction with these output
// scripts.
func entrySizeOf(outs [][]byte) int {
	size := entryHeader + 4*len(outs)
	for _, s := range outs {
		if !isOpReturn(s) {
			size += len(s)
		}
	}
	return size
}

// packEntry writes the entry of txid's outputs into dst
// (entrySizeOf(outs) bytes).
func packEntry(dst []byte, txid *chainhash.Hash, outs [][]byte) {
	copy(dst, txid[:])
	binary.LittleEndian.PutUint32(dst[chainhash.HashSize:], uint32(len(outs)))
	offs := dst[entryHeader:]
	data := offs[4*len(outs):]
	end := 0
	for i, s := range outs {
		if !isOpReturn(s) {
			end += copy(data[end:], s)
		}
		binary.LittleEndian.PutUint32(offs[4*i:], uint32(end))
	}
}

// put stores an entry of size bytes (at most a slab), written by fill,
// under key in the current generation, rotating generations first if it
// is full, and returns it. c.mu must be held.
func (c *scriptCache) put(key uint64, size int, fill func(dst []byte)) []byte {
	needSlab := len(c.cur.slabs) == 0 || c.cur.free+size > c.slabBytes
	cost := cacheIndexOverhead
	if needSlab {
		cost += c.slabBytes
	}
	if c.maxBytes > 0 && c.cur.bytes+cost > c.maxBytes/2 {
		c.old = c.cur
		c.cur = generation{index: make(map[uint64]uint32, len(c.old.index))}
		needSlab, cost = true, cacheIndexOverhead+c.slabBytes
	}
	g := &c.cur
	if needSlab {
		g.slabs = append(g.slabs, make([]byte, c.slabBytes))
		g.free = 0
	}
	slab := g.slabs[len(g.slabs)-1]
	dst := slab[g.free : g.free+size : g.free+size]
	fill(dst)
	g.index[key] = uint32(len(g.slabs)-1)<<(cacheSlabShift-3) | uint32(g.free/cacheAlign)
	g.free += alignUp(size)
	g.bytes += cost
	return dst
}

// alignUp rounds n up to cacheAlign.
func alignUp(n int) int { return (n + cacheAlign - 1) &^ (cacheAlign - 1) }

// resolve fills prev[i] with the script spends[i] spends where the cache
// has it and appends a spendRef (block bi) for each one it lacks. An
// outpoint beyond a cached transaction's outputs is an error.
func (c *scriptCache) resolve(spends []wire.OutPoint, prev [][]byte, bi int, refs []spendRef) ([]spendRef, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range spends {
		op := &spends[i]
		e, ok := c.lookup(&op.Hash)
		if !ok {
			refs = append(refs, spendRef{block: bi, slot: i, op: *op})
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
