package blockfiles

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// ReadUndo returns the spent scripts of block b, found at loc, from its
// undo record in the rev file of the same number. Errors wrap
// errUndoNotInFiles or errUndoAmbiguous when the files cannot answer.
func (d *Dir) ReadUndo(ctx context.Context, b *wirescan.ScannedBlock, loc blkLoc) (result [][]byte, err error) {
	if len(b.Txids) == 1 {
		return [][]byte{}, nil // a coinbase-only block spends nothing
	}
	want := uint32(len(b.Txids) - 1)
	tried := map[uint32]bool{}
	for attempt := 0; attempt < 2; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// The second attempt first walks what was appended to the rev
		// file: the block may have been connected since.
		recs, start, err := d.revCandidates(loc, b.Header.PrevBlock, attempt > 0)
		if err != nil {
			return nil, err
		}
		var found error = errUndoNotInFiles
		eachOutward(len(recs), start.idx, func(i int) bool {
			rec := recs[i]
			if rec.ntx != want || tried[rec.off] {
				return true
			}
			tried[rec.off] = true
			prev, payload, ok := d.tryUndo(loc.file, rec, b)
			if !ok {
				return true
			}
			if d.mayHaveSibling(loc.file, hashPrefix(&b.Header.PrevBlock)) {
				if err := d.checkUnambiguous(loc.file, rec, b, payload); err != nil {
					found = err
					return false
				}
			}
			d.remember(b.Hash, undoPos{file: loc.file, idx: i}, start.ordinal)
			result, found = prev, nil
			return false
		})
		if found == nil {
			return result, nil
		}
		if !errors.Is(found, errUndoNotInFiles) {
			return nil, found
		}
	}
	return nil, fmt.Errorf("block %s: %w (rev%05d.dat)", b.Hash, errUndoNotInFiles, loc.file)
}

// eachOutward calls fn with 0..n-1, starting at start and moving away from
// it on both sides, until fn returns false.
func eachOutward(n, start int, fn func(int) bool) {
	if n == 0 {
		return
	}
	start = max(0, min(start, n-1))
	for d := 0; start+d < n || start-d >= 0; d++ {
		if start+d < n && !fn(start+d) {
			return
		}
		if d > 0 && start-d >= 0 && !fn(start-d) {
			return
		}
	}
}

// revCandidates returns the undo records of loc's rev file and where to
// start looking: after the parent's record when it is known (the next
// block of a run), else at the block's ordinal among its blk file's records
// shifted by what the last match in this file showed (none: by the blocks
// that have no undo record, genesis in file 0). Core writes a rev file's
// records in the order it connected their blocks and the blk file in the
// order they arrived, the same order but for blocks downloaded out of
// order, so the record is at the start or close to it. refresh walks what
// was appended to the rev file first.
func (d *Dir) revCandidates(loc blkLoc, parent chainhash.Hash, refresh bool) ([]revRec, undoStart, error) {
	d.revMu.Lock()
	defer d.revMu.Unlock()
	rf := d.rev[loc.file]
	if rf == nil || refresh {
		var err error
		if rf, err = d.walkRevLocked(loc.file); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, undoStart{}, fmt.Errorf("%w: rev%05d.dat is missing", errUndoNotInFiles, loc.file)
			}
			return nil, undoStart{}, err
		}
	}
	d.revClock++
	rf.used = d.revClock
	start := undoStart{ordinal: d.blockOrdinalLocked(rf, loc)}
	switch h, ok := d.hints[parent]; {
	case ok && h.file == loc.file:
		start.idx = h.idx + 1
	case start.ordinal < 0:
	case rf.hasDelta:
		start.idx = start.ordinal + rf.delta
	default:
		start.idx = start.ordinal - max(0, len(rf.blkOffs)-len(rf.recs))
	}
	return rf.recs, start, nil
}

// blockOrdinalLocked returns the position of loc's block record among the
// records of its blk file, in file order, or -1 when the file is not
// indexed. The sorted offsets are kept with the rev file's index (and
// counted in its bound) and rebuilt when the blk file's index changed.
func (d *Dir) blockOrdinalLocked(rf *revFile, loc blkLoc) int {
	d.mu.RLock()
	f := d.blk[loc.file]
	if f == nil {
		d.mu.RUnlock()
		return -1
	}
	if rf.blkOffs == nil || rf.blkVersion != f.version {
		d.revRecs -= len(rf.blkOffs)
		offs := make([]uint32, len(f.entries))
		for i, e := range f.entries {
			offs[i] = e.off
		}
		rf.blkOffs, rf.blkVersion = offs, f.version
		d.mu.RUnlock()
		slices.Sort(offs)
		d.revRecs += len(offs)
		d.evictRevLocked(loc.file)
	} else {
		d.mu.RUnlock()
	}
	i, found := slices.BinarySearch(rf.blkOffs, loc.off)
	if !found {
		return -1
	}
	return i
}

// remember notes where b's undo record was, so its child starts there, and
// how far from its block's ordinal (-1: unknown) it was, for blocks of the
// same file without a known parent.
func (d *Dir) remember(hash chainhash.Hash, pos undoPos, ordinal int) {
	d.revMu.Lock()
	defer d.revMu.Unlock()
	if len(d.hints) >= maxUndoHints {
		clear(d.hints)
	}
	d.hints[hash] = pos
	if rf := d.rev[pos.file]; rf != nil && ordinal >= 0 {
		rf.delta, rf.hasDelta = pos.idx-ordinal, true
	}
}

// walkRevLocked walks rev file n from where its last walk stopped and
// keeps the index within maxRevRecords.
func (d *Dir) walkRevLocked(n int) (*revFile, error) {
	fh, err := os.Open(d.revPath(n))
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	rf := d.rev[n]
	if rf == nil {
		rf = &revFile{num: n}
		d.rev[n] = rf
	}
	if !rf.open && rf.size == st.Size() && rf.scanned > 0 {
		return rf, nil
	}
	before := len(rf.recs)
	from := rf.scanned
	if from > st.Size() {
		from, rf.recs = 0, nil
	}
	if from > 0 && rf.open {
		for len(rf.recs) > 0 && int64(rf.recs[len(rf.recs)-1].off) >= from {
			rf.recs = rf.recs[:len(rf.recs)-1]
		}
	}
	lastStart := int64(-1)
	end, stop, err := d.revWalk.walk(newWindowReader(fh, st.Size()), from, func(off int64, size uint32, head []byte) {
		ntx, _, err := wirescan.ReadCompactSize(head)
		if err != nil || ntx > uint64(size) {
			ntx = 1<<32 - 1 // never equal to a block's count
		}
		rf.recs = append(rf.recs, revRec{off: uint32(off), size: size, ntx: uint32(ntx)})
		lastStart = off
	})
	if err != nil {
		return nil, fmt.Errorf("walk rev%05d.dat: %w", n, err)
	}
	rf.size = st.Size()
	rf.open = stop != stopEOF
	rf.scanned = end
	if stop == stopPadding && lastStart >= 0 {
		rf.scanned = lastStart
	}
	d.revRecs += len(rf.recs) - before
	d.evictRevLocked(n)
	return rf, nil
}

// evictRevLocked drops the least recently used rev indexes other than
// keep's until at most maxRevRecords records are held.
func (d *Dir) evictRevLocked(keep int) {
	for d.revRecs > maxRevRecords {
		victim, oldest := -1, ^uint64(0)
		for n, rf := range d.rev {
			if n != keep && rf.used < oldest {
				victim, oldest = n, rf.used
			}
		}
		if victim < 0 {
			return
		}
		d.revRecs -= len(d.rev[victim].recs) + len(d.rev[victim].blkOffs)
		delete(d.rev, victim)
	}
}

// tryUndo reads undo record rec of rev file n and returns b's spent
// scripts if the record is b's: it has b's shape and its checksum names
// b's parent. The shape is read first: a record of another block with as
// many transactions (every full block of a run has about as many) differs
// within its first few transactions' input counts, so it is turned down
// without hashing it.
func (d *Dir) tryUndo(n int, rec revRec, b *wirescan.ScannedBlock) (prev [][]byte, payload []byte, ok bool) {
	d.undoReads.Add(1)
	payload, trailer, ok := d.readUndoPayload(n, rec)
	if !ok {
		return nil, nil, false
	}
	prev, err := prevScriptsFromUndo(payload, b)
	if err != nil {
		return nil, nil, false
	}
	if undoChecksum(b.Header.PrevBlock, payload) != chainhash.Hash(trailer) {
		return nil, nil, false
	}
	return prev, payload, true
}

// readUndoRecord reads undo record rec of rev file n and returns its
// CBlockUndo if its checksum is the one for a child of parent.
func (d *Dir) readUndoRecord(n int, rec revRec, parent chainhash.Hash) ([]byte, bool) {
	payload, trailer, ok := d.readUndoPayload(n, rec)
	return payload, ok && undoChecksum(parent, payload) == chainhash.Hash(trailer)
}

// readUndoPayload reads undo record rec of rev file n: its CBlockUndo and
// the checksum after it, not checked.
func (d *Dir) readUndoPayload(n int, rec revRec) (payload, trailer []byte, ok bool) {
	path := d.revPath(n)
	f, release, err := d.files.acquire(path)
	if err != nil {
		return nil, nil, false
	}
	payload, trailer, err = d.revWalk.readRecord(f, int64(rec.off))
	release()
	if err != nil {
		d.files.forget(path)
		return nil, nil, false
	}
	return payload, trailer, true
}

// undoChecksum is the checksum Core writes after an undo record:
// SHA256d(parent block hash ‖ CBlockUndo).
func undoChecksum(parent chainhash.Hash, undo []byte) chainhash.Hash {
	h := sha256.New()
	h.Write(parent[:])
	h.Write(undo)
	var first [sha256.Size]byte
	h.Sum(first[:0])
	return chainhash.Hash(sha256.Sum256(first[:]))
}

// checkUnambiguous looks, in the rev files around n, for another undo
// record that also fits b (its parent has another child) and differs from
// the one found.
func (d *Dir) checkUnambiguous(n int, found revRec, b *wirescan.ScannedBlock, payload []byte) error {
	want := uint32(len(b.Txids) - 1)
	for _, m := range [...]int{n - 1, n, n + 1} {
		d.revMu.Lock()
		rf, err := d.walkRevLocked(m)
		var recs []revRec
		if err == nil {
			recs = rf.recs
		}
		d.revMu.Unlock()
		for _, rec := range recs {
			if rec.ntx != want || (m == n && rec.off == found.off) {
				continue
			}
			other, ok := d.readUndoRecord(m, rec, b.Header.PrevBlock)
			if !ok || string(other) == string(payload) {
				continue
			}
			if _, err := prevScriptsFromUndo(other, b); err == nil {
				return fmt.Errorf("block %s: %w (rev%05d.dat at %d and rev%05d.dat at %d)", b.Hash, errUndoAmbiguous, n, found.off, m, rec.off)
			}
		}
	}
	return nil
}
