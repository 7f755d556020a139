package blockfiles

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// ReadBlock returns the block with the given hash read from its blk file,
// checked to hash to it and to match its merkle root, and where it was.
// Errors wrap ErrNotInFiles when no complete record of it is there.
func (d *Dir) ReadBlock(ctx context.Context, hash chainhash.Hash) (*wirescan.ScannedBlock, blkLoc, error) {
	locs, err := d.locate(ctx, hash)
	if err != nil {
		return nil, blkLoc{}, err
	}
	var firstErr error
	for attempt := 0; attempt < 2; attempt++ {
		if attempt > 0 {
			// Every candidate failed: the record may have been half
			// written when it was walked, or the file rewritten. Walk
			// what changed and look again, once.
			if locs, err = d.relocate(hash); err != nil {
				return nil, blkLoc{}, err
			}
		}
		for _, loc := range locs {
			b, err := d.readBlockAt(loc, hash)
			if err == nil {
				d.lastHit.Store(int64(loc.file))
				return b, loc, nil
			}
			if firstErr == nil {
				firstErr = err
			}
		}
		if firstErr == nil {
			break // not in the files at all
		}
	}
	if firstErr == nil {
		firstErr = ErrNotInFiles
	}
	return nil, blkLoc{}, fmt.Errorf("block %s: %w", hash, firstErr)
}

// relocate refreshes the index and looks hash up again.
func (d *Dir) relocate(hash chainhash.Hash) ([]blkLoc, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.refreshLocked(); err != nil {
		return nil, err
	}
	return d.lookupLocked(hashPrefix(&hash)), nil
}

func (d *Dir) readBlockAt(loc blkLoc, hash chainhash.Hash) (*wirescan.ScannedBlock, error) {
	path := d.blkPath(loc.file)
	f, release, err := d.files.acquire(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotInFiles, err)
	}
	raw, _, err := d.blkWalk.readRecord(f, int64(loc.off))
	release()
	if err != nil {
		d.files.forget(path)
		return nil, fmt.Errorf("%w: blk%05d.dat: %v", ErrNotInFiles, loc.file, err)
	}
	b, err := wirescan.ScanBlock(raw, hash)
	if err != nil {
		// A record still being written, or a 32-bit hash prefix shared
		// with another block.
		return nil, fmt.Errorf("%w: blk%05d.dat at %d: %v", ErrNotInFiles, loc.file, loc.off, err)
	}
	return b, nil
}

// locate returns the candidate positions of the block with the given hash
// (records whose hash starts with the same 32 bits), walking appended and
// older records as needed. None means the files do not hold it.
func (d *Dir) locate(ctx context.Context, hash chainhash.Hash) ([]blkLoc, error) {
	prefix := hashPrefix(&hash)
	d.mu.RLock()
	gen := d.gen.Load()
	locs := d.lookupLocked(prefix)
	d.mu.RUnlock()
	if len(locs) > 0 {
		return locs, nil
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gen.Load() != gen {
		// Another miss refreshed meanwhile.
		if locs = d.lookupLocked(prefix); len(locs) > 0 {
			return locs, nil
		}
	}
	if err := d.refreshLocked(); err != nil {
		return nil, err
	}
	if locs = d.lookupLocked(prefix); len(locs) > 0 {
		return locs, nil
	}
	// Walk older files, newest first, until the block turns up. On a big
	// directory (a catch-up from genesis walks all of mainnet's thousands
	// of files once) say so now and then.
	walked := 0
	for d.nextBack >= 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := d.nextBack
		d.nextBack--
		if err := d.walkBlkLocked(n); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // pruned
			}
			return nil, err
		}
		if walked++; walked%500 == 0 {
			d.log.Info().Int("files", walked).Int("next_file", d.nextBack).Msg("blocks dir: indexing older block files")
		}
		if locs = d.lookupLocked(prefix); len(locs) > 0 {
			return locs, nil
		}
	}
	return nil, nil
}

// lookupLocked finds prefix in the file of the last hit and its
// neighbours, then in every walked file.
func (d *Dir) lookupLocked(prefix uint32) []blkLoc {
	hit := int(d.lastHit.Load())
	for _, n := range [...]int{hit, hit + 1, hit - 1} {
		if f := d.blk[n]; f != nil {
			if locs := f.lookup(prefix, nil); len(locs) > 0 {
				return locs
			}
		}
	}
	var locs []blkLoc
	for n, f := range d.blk {
		if n < hit-1 || n > hit+1 {
			locs = f.lookup(prefix, locs)
		}
	}
	return locs
}

func (f *blkFile) lookup(prefix uint32, dst []blkLoc) []blkLoc {
	i, _ := slices.BinarySearchFunc(f.entries, prefix, func(e blkEntry, p uint32) int {
		switch {
		case e.hash < p:
			return -1
		case e.hash > p:
			return 1
		}
		return 0
	})
	for ; i < len(f.entries) && f.entries[i].hash == prefix; i++ {
		dst = append(dst, blkLoc{file: f.num, off: f.entries[i].off, extent: f.scanned})
	}
	return dst
}

// refreshLocked walks what was appended since the last walk: new records
// of walked files that may still change, and new files above the highest.
func (d *Dir) refreshLocked() error {
	d.gen.Add(1)
	blks, _, err := d.list()
	if err != nil {
		return err
	}
	present := make(map[int]bool, len(blks))
	for _, n := range blks {
		present[n] = true
		if n > d.highest {
			d.highest = n
			if err := d.walkBlkLocked(n); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	for n, f := range d.blk {
		if !present[n] {
			// Pruned: let go of the file so that its space is freed.
			delete(d.blk, n)
			d.files.forget(d.blkPath(n))
			d.files.forget(d.revPath(n))
			continue
		}
		st, err := os.Stat(d.blkPath(n))
		if err != nil {
			continue
		}
		if f.open || st.Size() != f.size {
			if err := d.walkBlkLocked(n); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// walkBlkLocked walks blk file n from where its last walk stopped.
func (d *Dir) walkBlkLocked(n int) error {
	fh, err := os.Open(d.blkPath(n))
	if err != nil {
		return err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return err
	}
	f := d.blk[n]
	if f == nil {
		f = &blkFile{num: n}
		d.blk[n] = f
	}
	from := f.scanned
	if from > st.Size() {
		// The file shrank: Core rewrote it (reindex). Start over.
		from, f.entries = 0, nil
	}
	if from > 0 && f.open {
		// The last record before the zero padding may have been
		// walked while Core was still writing it: walk it again.
		f.entries = slices.DeleteFunc(f.entries, func(e blkEntry) bool { return int64(e.off) >= from })
	}
	added := 0
	lastStart := int64(-1)
	end, stop, err := d.blkWalk.walk(newWindowReader(fh, st.Size()), from, func(off int64, size uint32, head []byte) {
		if len(head) < wire.MaxBlockHeaderPayload {
			return
		}
		h := chainhash.DoubleHashH(head[:wire.MaxBlockHeaderPayload])
		f.entries = append(f.entries, blkEntry{hash: hashPrefix(&h), parent: binary.LittleEndian.Uint32(head[4:8]), off: uint32(off)})
		added++
		lastStart = off
	})
	if err != nil {
		return fmt.Errorf("walk blk%05d.dat: %w", n, err)
	}
	f.size = st.Size()
	f.open = stop != stopEOF
	f.scanned = end
	if stop == stopPadding && lastStart >= 0 {
		f.scanned = lastStart
	}
	if stop == stopGarbage {
		d.log.Debug().Int("file", n).Int64("offset", end).Msg("blocks dir: unexpected bytes in a blk file; records after them are read from the fallback source")
	}
	if added > 0 || from == 0 {
		f.version++
		slices.SortFunc(f.entries, func(a, b blkEntry) int {
			if a.hash != b.hash {
				if a.hash < b.hash {
					return -1
				}
				return 1
			}
			return int(int64(a.off) - int64(b.off))
		})
		if !f.open {
			f.entries = slices.Clip(f.entries)
		}
		for _, m := range [...]int{n - 1, n, n + 1} {
			d.computeForksLocked(m)
		}
	}
	return nil
}

// computeForksLocked records the parents with several children among the
// blocks of file n and its walked neighbours.
func (d *Dir) computeForksLocked(n int) {
	f := d.blk[n]
	if f == nil {
		return
	}
	var parents []uint32
	for _, m := range [...]int{n - 1, n, n + 1} {
		if g := d.blk[m]; g != nil {
			for _, e := range g.entries {
				parents = append(parents, e.parent)
			}
		}
	}
	slices.Sort(parents)
	f.forks = f.forks[:0]
	for i := 1; i < len(parents); i++ {
		if parents[i] == parents[i-1] && (len(f.forks) == 0 || f.forks[len(f.forks)-1] != parents[i]) {
			f.forks = append(f.forks, parents[i])
		}
	}
	f.forks = slices.Clip(f.forks)
}

// mayHaveSibling reports whether a block in file n whose parent starts
// with prefix may have a sibling (another child of the same parent) in the
// files around it.
func (d *Dir) mayHaveSibling(n int, parent uint32) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	f := d.blk[n]
	if f == nil {
		return true
	}
	_, found := slices.BinarySearch(f.forks, parent)
	return found
}
