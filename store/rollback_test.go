package store

import (
	"errors"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestRollbackStaleAndReconnect(t *testing.T) {
	a := genChain(10, nil, 101) // heights 0..100
	b := genChain(11, &a[90], 15)
	s, _ := openTest(t, a[0].Hash)

	if _, err := s.Rollback(0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Rollback on empty store: %v, want ErrNotFound", err)
	}
	commitAll(t, s, a, 40)
	if _, err := s.Rollback(101); !errors.Is(err, ErrBadRange) {
		t.Fatalf("Rollback above tip: %v, want ErrBadRange", err)
	}
	if recs, err := s.Rollback(100); err != nil || len(recs) != 0 {
		t.Fatalf("Rollback to tip: %d records, %v", len(recs), err)
	}

	// Disconnect A 91..100: returned highest first, tip moves, blocks stay
	// retrievable by hash as stale.
	recs, err := s.Rollback(90)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]BlockRecord, 0, 10)
	for h := 100; h > 90; h-- {
		want = append(want, a[h])
	}
	checkRecords(t, "disconnected", recs, want)
	if tip, _ := s.Tip(); tip != tipOf(a[90]) {
		t.Fatalf("tip %+v, want %+v", tip, tipOf(a[90]))
	}
	assertStaleSet(t, s, a[91:])
	if _, err := s.FiltersByHeight(90, 91); !errors.Is(err, ErrNotFound) {
		t.Fatalf("FiltersByHeight above new tip: %v", err)
	}

	// Reorg to B; A stays stale, B is active.
	commitAll(t, s, b, 7)
	assertActive(t, s, a[:91])
	assertActive(t, s, b)
	assertStaleSet(t, s, a[91:])

	// Reorg back to A: B goes stale, A comes out of the stale set.
	recs, err = s.Rollback(90)
	if err != nil || len(recs) != len(b) {
		t.Fatalf("Rollback B: %d records, %v", len(recs), err)
	}
	commitAll(t, s, a[91:], 3)
	assertActive(t, s, a)
	assertStaleSet(t, s, b)
	if tip, _ := s.Tip(); tip != tipOf(a[100]) {
		t.Fatalf("tip %+v, want A's", tip)
	}

	// The genesis block cannot be disconnected; everything else can.
	recs, err = s.Rollback(0)
	if err != nil || len(recs) != 100 || recs[99].Height != 1 {
		t.Fatalf("Rollback(0): %d records, %v", len(recs), err)
	}
	assertActive(t, s, a[:1])
	assertStaleSet(t, s, append(clone(a[1:]), b...))
}

// assertActive checks that recs are on the active chain.
func assertActive(t *testing.T, s *Store, recs []BlockRecord) {
	t.Helper()
	for _, r := range recs {
		got, active, err := s.FilterByHash(r.Hash)
		if err != nil || !active {
			t.Fatalf("block %d %s: active %v, %v", r.Height, r.Hash, active, err)
		}
		if d := diffRecord(got, r); d != "" {
			t.Fatalf("block %d: %s differs", r.Height, d)
		}
		if h, err := s.HashAt(r.Height); err != nil || h != r.Hash {
			t.Fatalf("HashAt(%d) = %s, %v", r.Height, h, err)
		}
	}
}

// assertStaleSet checks that the stale set holds exactly recs, each
// retrievable by hash as stale and absent from the active chain.
func assertStaleSet(t *testing.T, s *Store, recs []BlockRecord) {
	t.Helper()
	for _, r := range recs {
		got, active, err := s.FilterByHash(r.Hash)
		if err != nil || active {
			t.Fatalf("stale block %d %s: active %v, %v", r.Height, r.Hash, active, err)
		}
		if d := diffRecord(got, r); d != "" {
			t.Fatalf("stale block %d: %s differs", r.Height, d)
		}
		if h, active, err := s.HeightOf(r.Hash); err != nil || active || h != r.Height {
			t.Fatalf("HeightOf(stale %d) = %d %v %v", r.Height, h, active, err)
		}
		if hdr, h, err := s.HeaderByHash(r.Hash); err != nil || h != r.Height || hdr.BlockHash() != r.Hash {
			t.Fatalf("HeaderByHash(stale %d): %d %v", r.Height, h, err)
		}
		if h, err := s.HashAt(r.Height); err == nil && h == r.Hash {
			t.Fatalf("stale block %d is also active", r.Height)
		}
	}
	var n int
	err := s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketStale).Stats().KeyN
		return nil
	})
	if err != nil || n != len(recs) {
		t.Fatalf("stale set holds %d blocks, want %d (%v)", n, len(recs), err)
	}
}

// TestReorgIsOneTransaction switches branches with Reorg: readers see the
// old tip or the new one, never the fork point between them; a new branch
// that does not connect leaves the old branch in place.
func TestReorgIsOneTransaction(t *testing.T) {
	a := genChain(20, nil, 60) // heights 0..59
	b := genChain(21, &a[50], 12)
	s, _ := openTest(t, a[0].Hash)
	commitAll(t, s, a, 25)

	// A branch that does not build on the fork point: nothing changes.
	c := genChain(22, &a[49], 3)
	if _, err := s.Reorg(50, c); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("Reorg with a branch off another block: %v, want ErrNotConnected", err)
	}
	assertActive(t, s, a)
	if tip, _ := s.Tip(); tip != tipOf(a[59]) {
		t.Fatalf("tip moved on a failed reorg: %+v", tip)
	}

	changed := s.TipChanged()
	gone, err := s.Reorg(50, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(gone) != 9 || gone[0].Hash != a[59].Hash {
		t.Fatalf("disconnected %d records", len(gone))
	}
	<-changed
	if tip, _ := s.Tip(); tip != tipOf(b[len(b)-1]) {
		t.Fatalf("tip %+v, want the new branch's", tip)
	}
	assertActive(t, s, a[:51])
	assertActive(t, s, b)
	assertStaleSet(t, s, a[51:])

	// No records: a plain rollback.
	if gone, err := s.Reorg(55, nil); err != nil || len(gone) != len(b)-5 {
		t.Fatalf("Reorg without records: %d, %v", len(gone), err)
	}
}
