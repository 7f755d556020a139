package store

import (
	"bytes"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/wireframe"
)

// flipInFile flips one byte, at offset at, of every copy of value in the
// closed file at path (bbolt leaves old copies on free pages), as a
// damaged disk would.
func flipInFile(t *testing.T, path string, value []byte, at int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := bytes.Index(data, value); i >= 0; {
		data[i+at] ^= 0x20
		n++
		j := bytes.Index(data[i+1:], value)
		if j < 0 {
			break
		}
		i += 1 + j
	}
	if n == 0 {
		t.Fatalf("value %x is not in the file", value[:8])
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// mismatchLog collects the OnMismatch calls of a store.
type mismatchLog struct {
	mu   sync.Mutex
	seen []MismatchError
}

func (l *mismatchLog) add(m *MismatchError) {
	l.mu.Lock()
	l.seen = append(l.seen, *m)
	l.mu.Unlock()
}

// wantMismatch fails unless err is a MismatchError at height h.
func wantMismatch(t *testing.T, what string, err error, h uint32) {
	t.Helper()
	m, ok := AsMismatch(err)
	if !ok || !errors.Is(err, ErrChecksumMismatch) || m.Height != h {
		t.Fatalf("%s: got %v, want a checksum mismatch at %d", what, err, h)
	}
}

// Every read that would return a damaged filter, filter hash, filter
// header or cfilter checksum fails with the height instead; Repair with
// the block's filter makes the height whole again and refuses any other.
func TestCheckedReadsAndRepair(t *testing.T) {
	chain := genChain(41, nil, 40)
	s, path := openTest(t, chain[0].Hash)
	commitAll(t, s, chain, 7)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	type fault struct {
		h     uint32
		what  string
		value []byte
		at    int
	}
	sumOf := func(h uint32) []byte {
		r := &chain[h]
		return checksumValue(h, cfilterChecksum(&r.Hash, r.Filter), r.Filter)
	}
	fhOf := func(h uint32) []byte {
		return filterHeaderValue(h, &chain[h].FilterHeader, &chain[h].FilterHash)
	}
	faults := []fault{
		{5, "filter", chain[5].Filter, len(chain[5].Filter) / 2},
		{0, "filter", chain[0].Filter, 0},
		{12, "filter hash", fhOf(12), hashLen + 3},
		{20, "filter header", fhOf(20), 9},
		{39, "filter header", fhOf(39), 0},
		{27, "cfilter checksum", sumOf(27), 1},
	}
	for _, f := range faults {
		flipInFile(t, path, f.value, f.at)
	}
	var log mismatchLog
	s, err := Open(path, chain[0].Hash, Options{NoSync: true, Timeout: 2 * time.Second, OnMismatch: log.add})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tip := chain[len(chain)-1]
	for _, f := range faults {
		h := f.h
		if f.what != "filter hash" && f.what != "filter header" {
			_, err := s.FiltersByHeight(h, h)
			wantMismatch(t, f.what+": FiltersByHeight", err, h)
			_, _, err = s.FilterByHash(chain[h].Hash)
			wantMismatch(t, f.what+": FilterByHash", err, h)
			_, err = s.EachFilter(h, []chainhash.Hash{chain[h].Hash}, func(int, []byte, wireframe.Checksum) (bool, error) {
				t.Fatalf("%s at %d: EachFilter served it", f.what, h)
				return false, nil
			})
			wantMismatch(t, f.what+": EachFilter", err, h)
			_, err = s.FiltersForStop(chain[h].Hash, h)
			wantMismatch(t, f.what+": FiltersForStop", err, h)
			continue
		}
		_, err := s.FilterHeadersByHeight(h, h)
		wantMismatch(t, f.what+": FilterHeadersByHeight", err, h)
		_, err = s.FiltersByHeight(h, h)
		wantMismatch(t, f.what+": FiltersByHeight", err, h)
		_, _, err = s.AppendFilterHashesForStop(nil, tip.Hash, h)
		wantMismatch(t, f.what+": AppendFilterHashesForStop", err, h)
		_, err = s.FilterHeadersForStop(chain[h].Hash, h)
		wantMismatch(t, f.what+": FilterHeadersForStop", err, h)
	}
	if len(log.seen) == 0 {
		t.Fatal("OnMismatch never called")
	}
	// The heights between the faults are served as ever.
	if _, err := s.FiltersByHeight(1, 4); err != nil {
		t.Fatal(err)
	}
	// A filter that is not the block's is refused.
	wantErr(t, "repair with another filter", s.Repair(5, chain[5].Header, chain[6].Filter), ErrFilterHeaderMismatch)
	wantErr(t, "repair of another block", s.Repair(5, chain[6].Header, chain[5].Filter), ErrNotFound)
	for _, f := range faults {
		if err := s.Repair(f.h, chain[f.h].Header, chain[f.h].Filter); err != nil {
			t.Fatalf("repair %s at %d: %v", f.what, f.h, err)
		}
	}
	got, err := s.FiltersByHeight(0, tip.Height)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, "after repair", got, chain)
	if _, err := s.FilterHeaderCheckpoints(tip.Hash, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EachFilter(0, hashesOf(chain), func(i int, f []byte, sum wireframe.Checksum) (bool, error) {
		if want := cfilterChecksum(&chain[i].Hash, chain[i].Filter); sum != want || !bytes.Equal(f, chain[i].Filter) {
			t.Fatalf("height %d after repair: wrong filter or checksum", i)
		}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
}

func hashesOf(recs []BlockRecord) []chainhash.Hash {
	out := make([]chainhash.Hash, len(recs))
	for i := range recs {
		out[i] = recs[i].Hash
	}
	return out
}

// A stale block whose value is damaged is not served either.
func TestCheckedStale(t *testing.T) {
	a := genChain(43, nil, 12)
	s, path := openTest(t, a[0].Hash)
	commitAll(t, s, a, 12)
	b := genChain(44, &a[8], 5)
	if _, err := s.Reorg(8, b); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	flipInFile(t, path, a[10].Filter, 2)
	s, err := Open(path, a[0].Hash, Options{NoSync: true, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, _, err = s.FilterByHash(a[10].Hash)
	if !errors.Is(err, ErrChecksumMismatch) {
		t.Fatalf("damaged stale block: %v", err)
	}
	if _, _, err := s.FilterByHash(a[11].Hash); err != nil {
		t.Fatal(err)
	}
}

// A schema-2 store upgrades to checked reads: served unchecked until the
// backfill passes, then checked, with the values as they were.
func TestUpgradeFromSchema2(t *testing.T) {
	chain := genChain(45, nil, 300)
	s, path := openTest(t, chain[0].Hash)
	commitAll(t, s, chain, 50)
	if _, err := s.Reorg(290, genChain(46, &chain[290], 3)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	downgradeToV2(t, path)
	s, err := Open(path, chain[0].Hash, Options{NoSync: true, Timeout: 2 * time.Second, holdBackfill: true})
	if err != nil {
		t.Fatal(err)
	}
	if v := func() uint32 { _ = s.Close(); return schemaVersionOf(t, path) }(); v != SchemaVersion {
		t.Fatalf("schema %d after the upgrade", v)
	}
	s, err = Open(path, chain[0].Hash, Options{NoSync: true, Timeout: 2 * time.Second, backfillBatchHeights: 40})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.FiltersByHeight(0, 290); err != nil {
		t.Fatal(err)
	} else {
		checkRecords(t, "during the backfill", got, chain[:291])
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := s.ChecksumBackfill()
		if err != nil || st.Err != nil {
			t.Fatal(err, st.Err)
		}
		if !st.Pending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("backfill still at %d..%d", st.Next, st.End)
		}
		time.Sleep(10 * time.Millisecond)
	}
	checkChecksums(t, s)
	got, err := s.FiltersByHeight(0, 290)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, "after the backfill", got, chain[:291])
	if _, _, err := s.FilterByHash(chain[295].Hash); err != nil {
		t.Fatalf("stale block after the upgrade: %v", err)
	}
}
