package store

import (
	"errors"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
)

func TestCommitBatchAndReadBack(t *testing.T) {
	chain := genChain(1, nil, 300)
	s, _ := openTest(t, chain[0].Hash)
	if _, ok := s.Tip(); ok {
		t.Fatal("empty store reports a tip")
	}
	// Uneven batches, the first holding only genesis.
	for _, b := range [][2]int{{0, 1}, {1, 8}, {8, 108}, {108, 300}} {
		if err := s.CommitBatch(chain[b[0]:b[1]]); err != nil {
			t.Fatalf("CommitBatch %v: %v", b, err)
		}
		tip, ok := s.Tip()
		if !ok || tip != tipOf(chain[b[1]-1]) {
			t.Fatalf("after batch %v: tip %+v %v, want %+v", b, tip, ok, tipOf(chain[b[1]-1]))
		}
	}

	for _, r := range chain {
		if h, err := s.HashAt(r.Height); err != nil || h != r.Hash {
			t.Fatalf("HashAt(%d) = %s, %v", r.Height, h, err)
		}
		if h, active, err := s.HeightOf(r.Hash); err != nil || h != r.Height || !active {
			t.Fatalf("HeightOf(%s) = %d %v %v", r.Hash, h, active, err)
		}
		if hdr, err := s.HeaderAt(r.Height); err != nil || hdr.BlockHash() != r.Hash {
			t.Fatalf("HeaderAt(%d): %v", r.Height, err)
		}
		if hdr, h, err := s.HeaderByHash(r.Hash); err != nil || hdr.BlockHash() != r.Hash || h != r.Height {
			t.Fatalf("HeaderByHash(%s): %d %v", r.Hash, h, err)
		}
		got, active, err := s.FilterByHash(r.Hash)
		if err != nil || !active {
			t.Fatalf("FilterByHash(%s): %v %v", r.Hash, active, err)
		}
		if d := diffRecord(got, r); d != "" {
			t.Fatalf("FilterByHash(%s): %s differs", r.Hash, d)
		}
	}

	tests := []struct {
		name       string
		start, end uint32
		err        error
	}{
		{"genesis only", 0, 0, nil},
		{"whole chain", 0, 299, nil},
		{"middle", 5, 17, nil},
		{"tip only", 299, 299, nil},
		{"start above end", 10, 9, ErrBadRange},
		{"more than MaxRange", 0, MaxRange, ErrRangeTooLarge},
		{"end above tip", 290, 300, ErrNotFound},
		{"wholly above tip", 300, 310, ErrNotFound},
		{"huge end", 0, ^uint32(0), ErrRangeTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := s.FiltersByHeight(tc.start, tc.end)
			wantErr(t, "FiltersByHeight", err, tc.err)
			fhs, err := s.FilterHeadersByHeight(tc.start, tc.end)
			wantErr(t, "FilterHeadersByHeight", err, tc.err)
			hdrs, err := s.Headers(tc.start, tc.end)
			wantErr(t, "Headers", err, tc.err)
			if tc.err != nil {
				return
			}
			want := chain[tc.start : tc.end+1]
			checkRecords(t, "FiltersByHeight", recs, want)
			for i := range want {
				if fhs[i] != want[i].FilterHeader {
					t.Fatalf("FilterHeadersByHeight[%d] differs", i)
				}
				if hdrs[i].BlockHash() != want[i].Hash {
					t.Fatalf("Headers[%d] differs", i)
				}
			}
		})
	}

	for _, h := range []uint32{300, 1 << 31} {
		if _, err := s.HashAt(h); !errors.Is(err, ErrNotFound) {
			t.Fatalf("HashAt(%d): %v, want ErrNotFound", h, err)
		}
		if _, err := s.HeaderAt(h); !errors.Is(err, ErrNotFound) {
			t.Fatalf("HeaderAt(%d): %v, want ErrNotFound", h, err)
		}
	}
	unknown := chainhash.Hash{1, 2, 3}
	if _, _, err := s.HeightOf(unknown); !errors.Is(err, ErrNotFound) {
		t.Fatalf("HeightOf(unknown): %v", err)
	}
	if _, _, err := s.HeaderByHash(unknown); !errors.Is(err, ErrNotFound) {
		t.Fatalf("HeaderByHash(unknown): %v", err)
	}
	if _, _, err := s.FilterByHash(unknown); !errors.Is(err, ErrNotFound) {
		t.Fatalf("FilterByHash(unknown): %v", err)
	}
}

// TestReturnedSlicesOwnTheirMemory pins down that nothing returned aliases
// bbolt's mmap: the results stay readable after Close unmaps the file, and
// writing into one result changes neither the store nor its neighbours.
func TestReturnedSlicesOwnTheirMemory(t *testing.T) {
	chain := genChain(2, nil, 50)
	s, _ := openTest(t, chain[0].Hash)
	commitAll(t, s, chain, 50)
	recs, err := s.FiltersByHeight(0, 49)
	if err != nil {
		t.Fatal(err)
	}
	one, _, err := s.FilterByHash(chain[7].Hash)
	if err != nil {
		t.Fatal(err)
	}
	stopRecs, err := s.FiltersForStop(chain[49].Hash, 10)
	if err != nil {
		t.Fatal(err)
	}
	// Appending to one filter must not overwrite the next one in the arena.
	_ = append(recs[3].Filter, 0xff, 0xff, 0xff)
	checkRecords(t, "after append", recs[4:5], chain[4:5])

	one.Filter[0] ^= 0xff
	again, _, err := s.FilterByHash(chain[7].Hash)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, "store after caller wrote", []BlockRecord{again}, chain[7:8])

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkRecords(t, "FiltersByHeight after Close", recs, chain)
	checkRecords(t, "FiltersForStop after Close", stopRecs, chain[10:])
}

func TestCommitBatchValidation(t *testing.T) {
	chain := genChain(3, nil, 30)
	other := genChain(4, nil, 2)
	tests := []struct {
		name     string
		preload  int // blocks committed before the batch
		batch    func() []BlockRecord
		wantErr  error
		wantNone bool // the batch is expected to be rejected
	}{
		{"empty batch is a no-op", 0, func() []BlockRecord { return nil }, nil, false},
		{"genesis of another network", 0, func() []BlockRecord { return other }, ErrNotConnected, true},
		{"empty store starts above 0", 0, func() []BlockRecord { return chain[1:5] }, ErrNotConnected, true},
		{"gap above tip", 10, func() []BlockRecord { return chain[11:15] }, ErrNotConnected, true},
		{"height repeats tip", 10, func() []BlockRecord { return chain[9:15] }, ErrNotConnected, true},
		{"genesis again", 10, func() []BlockRecord { return chain[0:1] }, ErrNotConnected, true},
		{"first prev is not the tip", 10, func() []BlockRecord {
			b := clone(chain[10:15])
			b[0] = relink(b[0], chainhash.Hash{9})
			return b
		}, ErrNotConnected, true},
		{"prev link broken mid-batch", 10, func() []BlockRecord {
			b := clone(chain[10:15])
			b[3] = relink(b[3], chain[11].Hash)
			return b
		}, ErrNotConnected, true},
		{"height skips mid-batch", 10, func() []BlockRecord {
			b := clone(chain[10:15])
			b[2].Height++
			return b
		}, ErrNotConnected, true},
		{"hash is not the header's", 10, func() []BlockRecord {
			b := clone(chain[10:15])
			b[4].Hash[0] ^= 1
			return b
		}, ErrInvalidRecord, true},
		{"empty filter mid-batch", 10, func() []BlockRecord {
			b := clone(chain[10:15])
			b[2].Filter = nil
			return b
		}, ErrInvalidRecord, true},
		{"filter hash is not the filter's", 10, func() []BlockRecord {
			b := clone(chain[10:15])
			b[1].FilterHash[0] ^= 1
			return b
		}, ErrInvalidRecord, true},
		{"filter header breaks mid-batch", 10, func() []BlockRecord {
			b := clone(chain[10:15])
			b[2].FilterHeader[31] ^= 1
			return b
		}, ErrFilterHeaderMismatch, true},
		{"single block's filter header does not continue the tip", 10, func() []BlockRecord {
			b := clone(chain[10:11])
			b[0].FilterHeader[0] ^= 1
			return b
		}, ErrFilterHeaderMismatch, true},
		{"genesis filter header not over the zero hash", 0, func() []BlockRecord {
			b := clone(chain[0:1])
			b[0].FilterHeader = filterHeader(b[0].Filter, chainhash.Hash{1})
			return b
		}, ErrFilterHeaderMismatch, true},
		{"self-consistent batch on another filter-header chain", 10, func() []BlockRecord {
			// The same blocks and filters, chained from a wrong tip header.
			parent := chain[9]
			parent.FilterHeader = chainhash.Hash{7}
			return genChain(3, &parent, 5)
		}, ErrFilterHeaderMismatch, true},
		{"valid batch", 10, func() []BlockRecord { return chain[10:15] }, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := openTest(t, chain[0].Hash)
			commitAll(t, s, chain[:tc.preload], 10)
			before, hadTip := s.Tip()
			changed := s.TipChanged()
			batch := tc.batch()
			err := s.CommitBatch(batch)
			wantErr(t, "CommitBatch", err, tc.wantErr)
			if !tc.wantNone {
				return
			}
			if after, ok := s.Tip(); after != before || ok != hadTip {
				t.Fatalf("tip moved from %+v to %+v", before, after)
			}
			select {
			case <-changed:
				t.Fatal("TipChanged fired for a rejected batch")
			default:
			}
			for _, r := range batch {
				if h, active, err := s.HeightOf(r.Hash); err == nil && (h != r.Height || !active || int(h) >= tc.preload) {
					t.Fatalf("rejected block %s found at %d (active %v)", r.Hash, h, active)
				}
			}
			if _, err := s.HashAt(uint32(tc.preload)); !errors.Is(err, ErrNotFound) {
				t.Fatalf("height %d present after a rejected batch: %v", tc.preload, err)
			}
		})
	}
}

// relink points r's header at prev and recomputes its hash, so only the
// link is wrong.
func relink(r BlockRecord, prev chainhash.Hash) BlockRecord {
	r.Header.PrevBlock = prev
	r.Hash = r.Header.BlockHash()
	return r
}

func clone(recs []BlockRecord) []BlockRecord {
	return append([]BlockRecord(nil), recs...)
}

func TestTipChanged(t *testing.T) {
	chain := genChain(5, nil, 20)
	s, _ := openTest(t, chain[0].Hash)
	fired := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	ch := s.TipChanged()
	if fired(ch) {
		t.Fatal("fired before any commit")
	}
	commitAll(t, s, chain[:10], 10)
	if !fired(ch) {
		t.Fatal("not fired by CommitBatch")
	}
	ch = s.TipChanged()
	if _, err := s.Rollback(9); err != nil || fired(ch) {
		t.Fatalf("no-op rollback: err %v, fired %v", err, fired(ch))
	}
	if err := s.CommitBatch(chain[12:13]); err == nil || fired(ch) {
		t.Fatalf("rejected batch: err %v, fired %v", err, fired(ch))
	}
	if _, err := s.Rollback(5); err != nil || !fired(ch) {
		t.Fatalf("rollback: err %v, fired %v", err, fired(ch))
	}
	ch = s.TipChanged()
	if err := s.Close(); err != nil || !fired(ch) {
		t.Fatalf("close: err %v, fired %v", err, fired(ch))
	}
	if !fired(s.TipChanged()) {
		t.Fatal("TipChanged after Close is not closed")
	}
}

// TestCommitBatchComputesFilterHash pins down that a caller may leave
// FilterHash zero (the indexer does): the store computes it, every read
// returns it, it survives a rollback into the stale set, and CommitBatch
// leaves the caller's records untouched.
func TestCommitBatchComputesFilterHash(t *testing.T) {
	chain := genChain(6, nil, 40)
	s, _ := openTest(t, chain[0].Hash)
	bare := clone(chain)
	for i := range bare {
		bare[i].FilterHash = chainhash.Hash{}
	}
	commitAll(t, s, bare, 16)
	for i := range bare {
		if bare[i].FilterHash != (chainhash.Hash{}) {
			t.Fatalf("CommitBatch wrote into the caller's record %d", i)
		}
	}
	recs, err := s.FiltersByHeight(0, 39)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, "FiltersByHeight", recs, chain)
	prev, hashes, err := s.FilterHashesForStop(chain[39].Hash, 1)
	if err != nil {
		t.Fatal(err)
	}
	if prev != chain[0].FilterHeader || len(hashes) != 39 || hashes[38] != chain[39].FilterHash {
		t.Fatalf("FilterHashesForStop: prev %s, %d hashes", prev, len(hashes))
	}
	gone, err := s.Rollback(30)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, "Rollback", gone, []BlockRecord{chain[39], chain[38], chain[37], chain[36], chain[35], chain[34], chain[33], chain[32], chain[31]})
	stale, active, err := s.FilterByHash(chain[35].Hash)
	if err != nil || active {
		t.Fatalf("FilterByHash(stale): active %v, %v", active, err)
	}
	checkRecords(t, "FilterByHash(stale)", []BlockRecord{stale}, chain[35:36])
}
