package blockfiles

// IndexStats returns how many block records and undo records the index
// holds and the bytes its slices take (12 bytes per block and per undo
// record, plus the small fork lists and the hints map, estimated at 64
// bytes an entry).
func (d *Dir) IndexStats() (blocks, undoRecords int, bytes int64) {
	d.mu.RLock()
	for _, f := range d.blk {
		blocks += len(f.entries)
		bytes += int64(cap(f.entries))*12 + int64(cap(f.forks))*4
	}
	d.mu.RUnlock()
	d.revMu.Lock()
	for _, rf := range d.rev {
		undoRecords += len(rf.recs)
		bytes += int64(cap(rf.recs))*12 + int64(cap(rf.blkOffs))*4
	}
	bytes += int64(len(d.hints)) * 64
	d.revMu.Unlock()
	return blocks, undoRecords, bytes
}
