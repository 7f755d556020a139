package store

import (
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// TestFiltersForStop builds an active chain A (0..2100) with two stale
// branches: B forks from A at 2000 (2001..2015) and C forks from B at 2008
// (2009..2012), so C's walk back crosses B before reaching A.
func TestFiltersForStop(t *testing.T) {
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
			if tc.err != nil {
				return
			}
			checkRecords(t, "FiltersForStop", recs, tc.want)
			if len(fhs) != len(tc.want) {
				t.Fatalf("FilterHeadersForStop: %d headers, want %d", len(fhs), len(tc.want))
			}
			for i, r := range tc.want {
				if fhs[i] != r.FilterHeader {
					t.Fatalf("FilterHeadersForStop[%d] (height %d) differs", i, r.Height)
				}
			}
		})
	}
}
