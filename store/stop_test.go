package store

import (
	"bytes"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// TestFiltersForStop reads ranges ending at active and stale stops of
// stopFixture with the three ...ForStop verbs.
func TestFiltersForStop(t *testing.T) {
	s, a, b, c := stopFixture(t)
	byHash := recordsByHash(a, b, c)

	cat := func(parts ...[]BlockRecord) []BlockRecord {
		var out []BlockRecord
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name  string
		stop  chainhash.Hash
		start uint32
		want  []BlockRecord
		err   error
	}{
		{"active tip", a[2100].Hash, 2050, a[2050:], nil},
		{"active single", a[50].Hash, 50, a[50:51], nil},
		{"active genesis", a[0].Hash, 0, a[:1], nil},
		{"active from genesis", a[1999].Hash, 0, a[:2000], nil},
		{"active full MaxRange", a[2100].Hash, 101, a[101:], nil},
		{"stale B crossing the fork", b[14].Hash, 1995, cat(a[1995:2001], b), nil},
		{"stale B from its first block", b[14].Hash, 2001, b, nil},
		{"stale B first block alone", b[0].Hash, 2001, b[:1], nil},
		{"stale B inside the branch", b[10].Hash, 2005, b[4:11], nil},
		{"stale C through B to A", c[3].Hash, 2000, cat(a[2000:2001], b[:8], c), nil},
		{"stale C within C", c[3].Hash, 2010, c[1:], nil},
		{"stale C ending at the fork from B", c[3].Hash, 2009, c, nil},
		{"stale C full MaxRange", c[3].Hash, 13, cat(a[13:2001], b[:8], c), nil},
		{"unknown stop", chainhash.Hash{0xde, 0xad}, 0, nil, ErrNotFound},
		{"start above active stop", a[50].Hash, 51, nil, ErrBadRange},
		{"start above stale stop", b[0].Hash, 2002, nil, ErrBadRange},
		{"active range too large", a[2100].Hash, 100, nil, ErrRangeTooLarge},
		{"stale range too large", c[3].Hash, 12, nil, ErrRangeTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := s.FiltersForStop(tc.stop, tc.start)
			wantErr(t, "FiltersForStop", err, tc.err)
			fhs, err := s.FilterHeadersForStop(tc.stop, tc.start)
			wantErr(t, "FilterHeadersForStop", err, tc.err)
			prev, hashes, err := s.FilterHashesForStop(tc.stop, tc.start)
			wantErr(t, "FilterHashesForStop", err, tc.err)
			// The appending form keeps what dst holds and appends the
			// same hashes; on error it returns dst as it was.
			dst := []byte("frame header")
			aprev, raw, err := s.AppendFilterHashesForStop(dst, tc.stop, tc.start)
			wantErr(t, "AppendFilterHashesForStop", err, tc.err)
			if !bytes.HasPrefix(raw, []byte("frame header")) || len(raw) != len(dst)+32*len(hashes) || aprev != prev {
				t.Fatalf("AppendFilterHashesForStop: %d bytes, prev %s", len(raw), aprev)
			}
			for i := range hashes {
				if !bytes.Equal(raw[len(dst)+32*i:len(dst)+32*i+32], hashes[i][:]) {
					t.Fatalf("AppendFilterHashesForStop hash %d differs", i)
				}
			}
			if tc.err != nil {
				return
			}
			checkRecords(t, "FiltersForStop", recs, tc.want)
			if len(fhs) != len(tc.want) || len(hashes) != len(tc.want) {
				t.Fatalf("%d filter headers and %d filter hashes, want %d", len(fhs), len(hashes), len(tc.want))
			}
			for i, r := range tc.want {
				if fhs[i] != r.FilterHeader {
					t.Fatalf("FilterHeadersForStop[%d] (height %d) differs", i, r.Height)
				}
				if hashes[i] != chainhash.DoubleHashH(r.Filter) {
					t.Fatalf("FilterHashesForStop[%d] (height %d) is not the filter's hash", i, r.Height)
				}
			}
			var wantPrev chainhash.Hash
			if tc.start > 0 {
				wantPrev = byHash[tc.want[0].Header.PrevBlock].FilterHeader
			}
			if prev != wantPrev {
				t.Fatalf("FilterHashesForStop prev header %s, want %s", prev, wantPrev)
			}
			// The answer is a valid cfheaders message: it chains to the
			// stop block's filter header.
			fh := prev
			for _, h := range hashes {
				fh = chainhash.DoubleHashH(append(h[:], fh[:]...))
			}
			if fh != tc.want[len(tc.want)-1].FilterHeader {
				t.Fatal("filter hashes do not chain from prev to the stop's filter header")
			}
		})
	}
}

// TestFilterHeaderCheckpoints reads checkpoints to active and stale stops
// of the stopFixture chains at several intervals and compares them with a
// walk of the expected chain.
func TestFilterHeaderCheckpoints(t *testing.T) {
	s, a, b, c := stopFixture(t)
	byHash := recordsByHash(a, b, c)
	expect := func(stop chainhash.Hash, interval uint32) []chainhash.Hash {
		var out []chainhash.Hash
		for r := byHash[stop]; ; r = byHash[r.Header.PrevBlock] {
			if r.Height > 0 && r.Height%interval == 0 {
				out = append([]chainhash.Hash{r.FilterHeader}, out...)
			}
			if r.Height == 0 {
				return out
			}
		}
	}
	stops := []struct {
		name string
		hash chainhash.Hash
	}{
		{"active tip", a[2100].Hash},
		{"active at a checkpoint", a[2000].Hash},
		{"active below the first checkpoint", a[999].Hash},
		{"active genesis", a[0].Hash},
		{"stale B", b[14].Hash},
		{"stale C through B", c[3].Hash},
	}
	for _, st := range stops {
		for _, interval := range []uint32{1, 7, 1000, 2003, 1 << 31} {
			got, err := s.FilterHeaderCheckpoints(st.hash, interval)
			if err != nil {
				t.Fatalf("%s every %d: %v", st.name, interval, err)
			}
			want := expect(st.hash, interval)
			if len(got) != len(want) {
				t.Fatalf("%s every %d: %d checkpoints, want %d", st.name, interval, len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%s every %d: checkpoint %d differs", st.name, interval, i)
				}
			}
		}
	}
	if _, err := s.FilterHeaderCheckpoints(chainhash.Hash{0xde, 0xad}, 1000); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown stop: %v", err)
	}
	if _, err := s.FilterHeaderCheckpoints(a[10].Hash, 0); !errors.Is(err, ErrBadRange) {
		t.Fatalf("interval 0: %v", err)
	}
}

// recordsByHash indexes the records of chains by block hash.
func recordsByHash(chains ...[]BlockRecord) map[chainhash.Hash]BlockRecord {
	m := make(map[chainhash.Hash]BlockRecord)
	for _, ch := range chains {
		for _, r := range ch {
			m[r.Hash] = r
		}
	}
	return m
}

// stopFixture returns a store holding an active chain A (0..2100) and two
// stale branches: B forks from A at 2000 (2001..2015) and C forks from B at
// 2008 (2009..2012), so C's walk back crosses B before reaching A.
func stopFixture(t *testing.T) (*Store, []BlockRecord, []BlockRecord, []BlockRecord) {
	t.Helper()
	a := genChainMaxN(20, nil, 2101, 8)
	b := genChain(21, &a[2000], 15)
	c := genChain(22, &b[7], 4) // b[7] is height 2008
	s, _ := openTest(t, a[0].Hash)
	commitAll(t, s, a[:2001], 500)
	commitAll(t, s, b, 15)
	if _, err := s.Rollback(2008); err != nil {
		t.Fatal(err)
	}
	commitAll(t, s, c, 4)
	if _, err := s.Rollback(2000); err != nil {
		t.Fatal(err)
	}
	commitAll(t, s, a[2001:], 100)
	return s, a, b, c
}
