package store

import (
	"bytes"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/wireframe"
)

// readAllFilters streams the filters of start..stop in chunks of chunk
// filters, one read transaction per chunk, checking that each comes with
// its block's cfilter checksum.
func readAllFilters(t *testing.T, s *Store, start uint32, hashes []chainhash.Hash, chunk int) [][]byte {
	t.Helper()
	var out [][]byte
	for i := 0; i < len(hashes); {
		n, err := s.EachFilter(start+uint32(i), hashes[i:], func(j int, filter []byte, sum wireframe.Checksum) (bool, error) {
			if want := cfilterChecksum(&hashes[i+j], filter); sum != want {
				t.Errorf("height %d: checksum %x, want %x", start+uint32(i+j), sum, want)
			}
			out = append(out, bytes.Clone(filter))
			return j+1 < chunk, nil
		})
		if err != nil {
			t.Fatalf("EachFilter from %d: %v", start+uint32(i), err)
		}
		if n == 0 {
			t.Fatal("EachFilter made no progress")
		}
		i += n
	}
	return out
}

// BlockHashesForStop + EachFilter return what FiltersForStop returns, for
// active and stale stops and any chunking.
func TestStreamedFiltersMatchFiltersForStop(t *testing.T) {
	s, a, b, c := stopFixture(t)
	tests := []struct {
		name  string
		stop  chainhash.Hash
		start uint32
	}{
		{"active tip", a[2100].Hash, 2050},
		{"active genesis", a[0].Hash, 0},
		{"active full range", a[2100].Hash, 101},
		{"stale B crossing the fork", b[14].Hash, 1995},
		{"stale C through B to A", c[3].Hash, 2000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, err := s.FiltersForStop(tc.stop, tc.start)
			if err != nil {
				t.Fatal(err)
			}
			hashes, err := s.BlockHashesForStop(tc.stop, tc.start)
			if err != nil {
				t.Fatal(err)
			}
			if len(hashes) != len(want) {
				t.Fatalf("%d hashes, want %d", len(hashes), len(want))
			}
			for i := range want {
				if hashes[i] != want[i].Hash {
					t.Fatalf("hash %d (height %d) differs", i, want[i].Height)
				}
			}
			for _, chunk := range []int{1, 7, len(want)} {
				got := readAllFilters(t, s, tc.start, hashes, chunk)
				for i := range want {
					if !bytes.Equal(got[i], want[i].Filter) {
						t.Fatalf("chunk %d: filter %d (height %d) differs", chunk, i, want[i].Height)
					}
				}
			}
		})
	}
	for _, tc := range []struct {
		name  string
		stop  chainhash.Hash
		start uint32
		err   error
	}{
		{"unknown stop", chainhash.Hash{0xde, 0xad}, 0, ErrNotFound},
		{"start above stop", a[50].Hash, 51, ErrBadRange},
		{"range too large", a[2100].Hash, 100, ErrRangeTooLarge},
	} {
		if _, err := s.BlockHashesForStop(tc.stop, tc.start); !errors.Is(err, tc.err) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.err)
		}
	}
}

// A reorg between fixing the blocks and reading their filters does not
// change the answer: the filters are those of the chain the hashes name,
// now partly in the stale set; and a reorg back makes them active again.
func TestStreamedFiltersSurviveReorg(t *testing.T) {
	s, a, b, _ := stopFixture(t)
	hashes, err := s.BlockHashesForStop(a[2060].Hash, 1990)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		t.Helper()
		got := readAllFilters(t, s, 1990, hashes, 5)
		for i, f := range got {
			if !bytes.Equal(f, a[1990+i].Filter) {
				t.Fatalf("%s: filter at height %d is not chain A's", what, 1990+i)
			}
		}
	}
	check("before the reorg")
	// Reorg to a branch from 2000: A's blocks 2001.. become stale.
	if _, err := s.Rollback(2000); err != nil {
		t.Fatal(err)
	}
	commitAll(t, s, b, 15)
	check("after a reorg to B")
	// And back to A.
	if _, err := s.Rollback(2000); err != nil {
		t.Fatal(err)
	}
	commitAll(t, s, a[2001:], 100)
	check("after the reorg back to A")

	// A hash the store never held is ErrNotFound.
	bogus := append([]chainhash.Hash{}, hashes[:3]...)
	bogus[2] = chainhash.Hash{0xbe, 0xef}
	n, err := s.EachFilter(1990, bogus, func(int, []byte, wireframe.Checksum) (bool, error) { return true, nil })
	if !errors.Is(err, ErrNotFound) || n != 2 {
		t.Fatalf("unknown block: %d read, %v", n, err)
	}
	// fn's error stops the walk and is returned.
	stop := errors.New("stop")
	n, err = s.EachFilter(1990, hashes, func(int, []byte, wireframe.Checksum) (bool, error) { return true, stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("fn error: %d read, %v", n, err)
	}
}
