package spindex_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/cfindexd/cfindexd/store"
	"github.com/cfindexd/cfindexd/store/spindex"
)

// damaged is a store of 15 blocks indexed from 1 whose values named by
// flips (bucket and height) had a byte flipped while it was closed.
func damaged(t *testing.T, flips ...flip) (*store.Store, *chain) {
	t.Helper()
	c := genChain(nil, 0, 8, 15)
	path := filepath.Join(t.TempDir(), "s.db")
	st := openStore(t, path, c.recs[0].Hash)
	if _, err := st.SilentPayments().Enable(1); err != nil {
		t.Fatal(err)
	}
	c.attach(1, 15, chainhash.Hash{})
	if err := st.CommitBatch(c.recs); err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, f := range flips {
			bk := tx.Bucket(f.bucket)
			v := append([]byte(nil), bk.Get(spindex.HeightKey(f.height))...)
			v[len(v)-5] ^= 0x01
			if err := bk.Put(spindex.HeightKey(f.height), v); err != nil {
				return err
			}
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return openStore(t, path, c.recs[0].Hash), c
}

type flip struct {
	bucket []byte
	height uint32
}

// TestScrubFindsAndRewindDropsDamage: Scrub stops at the lowest damaged
// height with its MismatchError; Rewind there leaves an index that reads
// and scrubs clean, ends just below the damage (further down when the
// header under it is damaged too) and continues the original chain.
func TestScrubFindsAndRewindDropsDamage(t *testing.T) {
	for _, tc := range []struct {
		name     string
		flips    []flip
		found    uint32 // the height Scrub reports
		wantNext uint32 // Next after Rewind(found)
	}{
		{"tweak data", []flip{{spindex.BucketTweaks, 9}}, 9, 9},
		{"taproot filter", []flip{{spindex.BucketFilters, 4}, {spindex.BucketTweaks, 12}}, 4, 4},
		{"commitment header", []flip{{spindex.BucketHeaders, 11}}, 11, 11},
		{"header below damaged too", []flip{{spindex.BucketTweaks, 6}, {spindex.BucketHeaders, 5}}, 5, 5},
		{"tweak and the header under it", []flip{{spindex.BucketTweaks, 8}, {spindex.BucketHeaders, 7}, {spindex.BucketFilters, 10}}, 7, 7},
		{"first height", []flip{{spindex.BucketFilters, 1}}, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, c := damaged(t, tc.flips...)
			x := st.SilentPayments()
			next, err := x.Scrub(1, 5)
			if tc.found > 5 && (err != nil || next != 6) {
				t.Fatalf("Scrub(1, 5) = %d, %v, want 6 and no error", next, err)
			}
			next, err = x.Scrub(next, spindex.MaxRange)
			var m *spindex.MismatchError
			if !errors.As(err, &m) || m.Height != tc.found || next != tc.found {
				t.Fatalf("Scrub: %d, %v, want a mismatch at %d", next, err, tc.found)
			}
			// Rewinding from a higher report of the same damage, then the
			// lowest, ends at the same place.
			if _, err := x.Rewind(tc.found + 1); err != nil {
				t.Fatal(err)
			}
			s, err := x.Rewind(tc.found)
			if err != nil {
				t.Fatal(err)
			}
			if s.Next != tc.wantNext {
				t.Fatalf("after Rewind(%d): next %d, want %d", tc.found, s.Next, tc.wantNext)
			}
			if got, _ := x.State(); got != s {
				t.Fatalf("State %+v, Rewind returned %+v", got, s)
			}
			var wantHeader chainhash.Hash
			if s.Next > 1 {
				wantHeader = c.recs[s.Next-1].SilentPay.Header
			}
			if s.Header != wantHeader {
				t.Fatalf("header after Rewind %s, want %s", s.Header, wantHeader)
			}
			if n, err := x.Scrub(1, spindex.MaxRange); err != nil || n != s.Next {
				t.Fatalf("Scrub after Rewind: %d, %v, want %d", n, err, s.Next)
			}
			if _, err := x.TweakData(s.Next, s.Next); !errors.Is(err, spindex.ErrNotFound) {
				t.Fatalf("tweak data at the rewound height: %v, want ErrNotFound", err)
			}
			// The backfill's rebuild continues the original chain.
			var es []spindex.Entry
			for h := s.Next; h < 15; h++ {
				es = append(es, spindex.Entry{Height: h, Hash: c.recs[h].Hash, Block: *c.recs[h].SilentPay})
			}
			if err := x.Commit(es); err != nil {
				t.Fatalf("rebuild: %v", err)
			}
			if n, err := x.Scrub(1, spindex.MaxRange); err != nil || n != 15 {
				t.Fatalf("Scrub after the rebuild: %d, %v, want 15", n, err)
			}
		})
	}
}

// TestOpenDropsDamagedTopHeader: a top commitment header failing its CRC
// does not stop the store from opening; it is dropped with the entries of
// its height.
func TestOpenDropsDamagedTopHeader(t *testing.T) {
	st, c := damaged(t, flip{spindex.BucketHeaders, 14})
	s, _ := st.SilentPayments().State()
	if s.Next != 14 || s.Header != c.recs[13].SilentPay.Header {
		t.Fatalf("state after Open: next %d header %s, want 14 %s", s.Next, s.Header, c.recs[13].SilentPay.Header)
	}
}
