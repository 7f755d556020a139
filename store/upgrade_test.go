package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/wireframe"
)

// v1FixtureChains rebuilds the blocks of testdata/store-v1.db (see
// testdata/README.md): a is the first branch (heights 0..39; 36..39 went
// stale), b and c the active branch above height 35 (36..40, 41..42).
func v1FixtureChains() (a, b, c []BlockRecord) {
	a = genChainMaxN(90, nil, 40, 60)
	b = genChainMaxN(91, &a[35], 5, 60)
	c = genChainMaxN(91, &b[4], 2, 60)
	return a, b, c
}

// copyFixture copies testdata/store-v1.db into a temporary directory.
func copyFixture(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "store-v1.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "filters.db")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// schemaVersionOf reads the schema version of the closed store at path.
func schemaVersionOf(t *testing.T, path string) uint32 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v uint32
	err = db.View(func(tx *bolt.Tx) (err error) {
		v, err = decodeHeight(tx.Bucket(bucketMeta).Get(metaSchemaVersion))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// checkChecksums checks every cfilter checksum the store keeps: the
// checksums bucket holds exactly the active heights that are not pending
// backfill, each the checksum of its block, and every stale value holds
// its block's.
func checkChecksums(t *testing.T, s *Store) {
	t.Helper()
	err := s.view(func(b *buckets) error {
		tip, ok, err := b.readTip()
		if err != nil || !ok {
			return err
		}
		next, end, pending, err := b.readBackfill()
		if err != nil {
			return err
		}
		for h := uint32(0); h <= tip.Height; h++ {
			rec, err := b.activeRecord(h)
			if err != nil {
				return err
			}
			v := b.checksums.Get(heightKey(h))
			want := checksumValue(h, cfilterChecksum(&rec.Hash, rec.Filter), rec.Filter)
			if pending && h >= next && h < end {
				// Absent, as schema 2 wrote it, or a block committed
				// since the upgrade: its own.
				if v != nil && !bytes.Equal(v, want[:len(v)]) {
					return fmt.Errorf("height %d (pending): checksum %x, want %x", h, v, want)
				}
				continue
			}
			if !bytes.Equal(v, want) {
				return fmt.Errorf("height %d: checksum %x, want %x", h, v, want)
			}
		}
		if k, _ := b.checksums.Cursor().Last(); k != nil && binary32(k) > tip.Height {
			return fmt.Errorf("checksum stored at height %d above the tip %d", binary32(k), tip.Height)
		}
		return b.stale.ForEach(func(k, v []byte) error {
			r, sum, err := decodeStale(chainhash.Hash(k), v)
			if err != nil {
				return err
			}
			if want := cfilterChecksum(&r.Hash, r.Filter); sum != want {
				return fmt.Errorf("stale %s: checksum %x, want %x", r.Hash, sum, want)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

func binary32(k []byte) uint32 {
	h, _ := decodeHeight(k)
	return h
}

// waitBackfill waits until s has no pending backfill.
func waitBackfill(t *testing.T, s *Store) {
	t.Helper()
	deadline := time.Now().Add(testtime.Scale(30 * time.Second))
	for {
		st, err := s.ChecksumBackfill()
		if err != nil {
			t.Fatal(err)
		}
		if st.Err != nil {
			t.Fatalf("backfill stopped: %v", st.Err)
		}
		if !st.Pending {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("backfill still pending at %d..%d", st.Next, st.End)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// streamAll returns the filters and checksums EachFilter gives for the
// chain ending at stop from start, in one call.
func streamAll(t *testing.T, s *Store, stop chainhash.Hash, start uint32) (hashes []chainhash.Hash, filters [][]byte, sums []wireframe.Checksum) {
	t.Helper()
	hashes, err := s.BlockHashesForStop(stop, start)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.EachFilter(start, hashes, func(_ int, f []byte, sum wireframe.Checksum) (bool, error) {
		filters = append(filters, bytes.Clone(f))
		sums = append(sums, sum)
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hashes, filters, sums
}

// A store written by the schema-1 code opens, is upgraded in place
// (schema 2, stale values with checksums, the backfill pending over every
// active height), serves the same filters with the right checksums before
// the backfill (computed) and after it (stored), and keeps working.
func TestUpgradeSchema1Fixture(t *testing.T) {
	path := copyFixture(t)
	a, b, c := v1FixtureChains()
	active := append(append(append([]BlockRecord{}, a[:36]...), b...), c...)
	if v := schemaVersionOf(t, path); v != 1 {
		t.Fatalf("fixture has schema %d", v)
	}

	s, err := Open(path, a[0].Hash, Options{holdBackfill: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.ChecksumBackfill()
	if err != nil || !st.Pending || st.Next != 0 || st.End != 43 {
		t.Fatalf("after the upgrade: %+v, %v", st, err)
	}
	checkChecksums(t, s)
	// The same filters and records as the schema-1 code wrote, active and
	// stale, with each cfilter checksum right (computed for now).
	recs, err := s.FiltersByHeight(0, 42)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, "active chain", recs, active)
	for _, want := range a[36:] {
		got, isActive, err := s.FilterByHash(want.Hash)
		if err != nil || isActive || diffRecord(got, want) != "" {
			t.Fatalf("stale block %d: active %v, %v, %s", want.Height, isActive, err, diffRecord(got, want))
		}
	}
	checkStream := func(what string) {
		t.Helper()
		for _, stop := range []BlockRecord{c[1], a[39]} {
			hashes, filters, sums := streamAll(t, s, stop.Hash, 0)
			for i := range hashes {
				if want := cfilterChecksum(&hashes[i], filters[i]); sums[i] != want {
					t.Fatalf("%s: stop %d, height %d: checksum %x, want %x", what, stop.Height, i, sums[i], want)
				}
			}
		}
	}
	checkStream("before the backfill")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if v := schemaVersionOf(t, path); v != SchemaVersion {
		t.Fatalf("schema %d after the upgrade", v)
	}

	// Reopened, the backfill runs (in two batches) and the marker goes.
	var batches []uint32
	var mu sync.Mutex
	s, err = Open(path, a[0].Hash, Options{backfillBatchHeights: 25, backfillHook: func(phase string, next uint32) {
		if phase == "write" {
			mu.Lock()
			batches = append(batches, next)
			mu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	waitBackfill(t, s)
	// The hook runs just after each batch commits.
	for deadline := time.Now().Add(testtime.Scale(10 * time.Second)); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		got := fmt.Sprint(batches)
		mu.Unlock()
		if got == "[25 43]" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("backfill batches ended at %v, want [25 43]", got)
		}
	}
	checkChecksums(t, s)
	checkStream("after the backfill")

	// It goes on as a schema-2 store: a commit, a reorg back onto the
	// stale branch.
	more := genChainMaxN(91, &c[1], 3, 60)
	commitAll(t, s, more, 3)
	if _, err := s.Reorg(35, a[36:]); err != nil {
		t.Fatal(err)
	}
	checkChecksums(t, s)
}

// downgradeToV1 rewrites the closed schema-2 store at path in schema 1's
// layout, as the schema-1 code would have written the same blocks: no
// checksums bucket or backfill marker, stale values without a checksum.
// TestDowngradeMatchesFixture checks it against the real fixture.
func downgradeToV1(t testing.TB, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		if err := downgradeTxToV2(tx); err != nil {
			return err
		}
		if err := tx.DeleteBucket(bucketChecksums); err != nil {
			return err
		}
		meta := tx.Bucket(bucketMeta)
		if err := meta.Delete(metaChecksumBackfill); err != nil {
			return err
		}
		if err := meta.Put(metaSchemaVersion, heightKey(schemaV1)); err != nil {
			return err
		}
		stale := tx.Bucket(bucketStale)
		var keys, values [][]byte
		err := stale.ForEach(func(k, v []byte) error {
			v1 := append(bytes.Clone(v[:staleChecksumAt]), v[staleFixedLen:]...)
			keys, values = append(keys, bytes.Clone(k)), append(values, v1)
			return nil
		})
		if err != nil {
			return err
		}
		for i := range keys {
			if err := stale.Put(keys[i], values[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// dumpBuckets returns every key and value of every bucket of the closed
// store at path, as text.
func dumpBuckets(t *testing.T, path string) string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out bytes.Buffer
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			return bk.ForEach(func(k, v []byte) error {
				fmt.Fprintf(&out, "%s %x %x\n", name, k, v)
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// The test helper that writes schema-1 stores (for tests larger than the
// fixture) writes exactly what the schema-1 code wrote for the same blocks.
func TestDowngradeMatchesFixture(t *testing.T) {
	a, b, c := v1FixtureChains()
	s, path := openTest(t, a[0].Hash)
	commitAll(t, s, a, 16)
	if _, err := s.Reorg(35, b); err != nil {
		t.Fatal(err)
	}
	commitAll(t, s, c, 2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	downgradeToV1(t, path)
	if got, want := dumpBuckets(t, path), dumpBuckets(t, copyFixture(t)); got != want {
		t.Fatalf("downgraded store differs from the schema-1 fixture:\n%s\nwant:\n%s", got, want)
	}
}

// A failed Open of a schema-1 file (another network) does not upgrade it;
// a version this build neither reads nor upgrades is refused.
func TestUpgradeOnlyWhenOpened(t *testing.T) {
	path := copyFixture(t)
	if _, err := Open(path, chainhash.Hash{1}, Options{}); !errors.Is(err, ErrWrongNetwork) {
		t.Fatalf("other genesis: %v", err)
	}
	if v := schemaVersionOf(t, path); v != schemaV1 {
		t.Fatalf("schema %d after a failed open", v)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(metaSchemaVersion, heightKey(0)) })
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	a, _, _ := v1FixtureChains()
	if _, err := Open(path, a[0].Hash, Options{}); !errors.Is(err, ErrSchemaVersion) {
		t.Fatalf("schema 0: %v", err)
	}
}

// A checksum missing outside the backfill's range is corruption, for
// EachFilter and for a rollback that would file the block as stale.
func TestMissingChecksumIsCorrupt(t *testing.T) {
	recs := genChain(92, nil, 30)
	s, _ := openTest(t, recs[0].Hash)
	commitAll(t, s, recs, 30)
	err := s.update(func(b *buckets) error { return b.checksums.Delete(heightKey(20)) })
	if err != nil {
		t.Fatal(err)
	}
	hashes, err := s.BlockHashesForStop(recs[29].Hash, 10)
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.EachFilter(10, hashes, func(int, []byte, wireframe.Checksum) (bool, error) { return true, nil })
	if !errors.Is(err, ErrCorrupt) || n != 10 {
		t.Fatalf("EachFilter over the missing checksum: %d read, %v", n, err)
	}
	if _, err := s.Rollback(10); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Rollback over the missing checksum: %v", err)
	}
}

// The backfill runs while the indexer commits, reorgs below and above its
// front, and readers stream filters: every read sees right checksums and
// the store ends with every checksum stored and right. One batch is held
// between its read and its write while a reorg replaces the blocks it
// read, so the write must skip them.
func TestBackfillAlongsideWriterAndReaders(t *testing.T) {
	const n = 3000
	chain := genChainMaxN(93, nil, n, 40)
	s, path := openTest(t, chain[0].Hash)
	commitAll(t, s, chain, 500)
	// Stale blocks from schema-1 days.
	side := genChainMaxN(94, &chain[n-11], 4, 40)
	if _, err := s.Reorg(uint32(n-11), side); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reorg(uint32(n-11), chain[n-10:]); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	downgradeToV1(t, path)

	held, release := make(chan uint32), make(chan struct{})
	var once sync.Once
	hook := func(phase string, next uint32) {
		if phase == "read" && next >= 1000 {
			once.Do(func() {
				held <- next
				<-release
			})
		}
	}
	s, err := Open(path, chain[0].Hash, Options{NoSync: true, backfillBatchHeights: 37, backfillHook: hook})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	readErr := make(chan error, 1)
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			tip, _ := s.Tip()
			start := uint32(i*97) % (tip.Height - 999)
			stop, err := s.HashAt(start + 999)
			if err != nil {
				continue // raced a rollback
			}
			hashes, err := s.BlockHashesForStop(stop, start)
			if err != nil {
				continue
			}
			_, err = s.EachFilter(start, hashes, func(j int, f []byte, sum wireframe.Checksum) (bool, error) {
				if want := cfilterChecksum(&hashes[j], f); sum != want {
					return false, fmt.Errorf("height %d: checksum %x, want %x", start+uint32(j), sum, want)
				}
				return true, nil
			})
			if err != nil {
				readErr <- err
				return
			}
		}
	})

	reorg := func(to uint32, recs []BlockRecord) {
		t.Helper()
		if _, err := s.Reorg(to, recs); err != nil {
			t.Fatal(err)
		}
		chain = append(chain[:to+1], recs...)
	}
	extend := func(branch uint64, k int) {
		t.Helper()
		ext := genChainMaxN(branch, &chain[len(chain)-1], k, 40)
		commitAll(t, s, ext, 25)
		chain = append(chain, ext...)
	}
	var front uint32
	select {
	case front = <-held:
	case <-time.After(testtime.Scale(30 * time.Second)):
		t.Fatal("the backfill never reached height 1000")
	}
	// The held batch read front..front+36; replace those blocks.
	old := append([]BlockRecord{}, chain[front+10:]...)
	reorg(front+9, genChainMaxN(200, &chain[front+9], 30, 40))
	extend(201, 20)
	close(release)
	reorg(front+9, old) // back onto the schema-1 blocks
	extend(202, 50)
	// Below the front, then back.
	st, err := s.ChecksumBackfill()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("backfill at %d..%d (held at %d)", st.Next, st.End, front)
	old = append([]BlockRecord{}, chain[201:]...)
	reorg(200, genChainMaxN(203, &chain[200], 5, 40))
	reorg(200, old)
	extend(204, 50)
	// Near the tip.
	tip := uint32(len(chain) - 1)
	reorg(tip-3, genChainMaxN(205, &chain[tip-3], 6, 40))

	waitBackfill(t, s)
	cancel()
	wg.Wait()
	select {
	case err := <-readErr:
		t.Fatal(err)
	default:
	}
	checkChecksums(t, s)
	recs, err := s.FiltersByHeight(uint32(len(chain)-MaxRange), uint32(len(chain)-1))
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, "active chain", recs, chain[len(chain)-MaxRange:])
}
