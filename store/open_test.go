package store

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/cfindexd/cfindexd/internal/testtime"
)

func TestReopenKeepsEverything(t *testing.T) {
	a := genChain(30, nil, 120)
	b := genChain(31, &a[100], 5)
	s, path := openTest(t, a[0].Hash)
	commitAll(t, s, a[:101], 30)
	commitAll(t, s, b, 5)
	if _, err := s.Rollback(100); err != nil {
		t.Fatal(err)
	}
	commitAll(t, s, a[101:], 30)
	sizeBefore := s.SizeBytes()
	if sizeBefore <= 0 {
		t.Fatalf("SizeBytes = %d", sizeBefore)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	s, err := Open(path, a[0].Hash, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if tip, ok := s.Tip(); !ok || tip != tipOf(a[119]) {
		t.Fatalf("reopened tip %+v %v, want %+v", tip, ok, tipOf(a[119]))
	}
	assertActive(t, s, a)
	assertStaleSet(t, s, b)
	if got := s.SizeBytes(); got != sizeBefore {
		t.Fatalf("SizeBytes after reopen %d, before %d", got, sizeBefore)
	}
	// And the reopened store keeps accepting blocks.
	more := genChain(30, &a[119], 3)
	commitAll(t, s, more, 3)
}

func TestClosedStore(t *testing.T) {
	chain := genChain(32, nil, 5)
	s, _ := openTest(t, chain[0].Hash)
	commitAll(t, s, chain, 5)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	calls := map[string]error{
		"CommitBatch": s.CommitBatch(genChain(32, &chain[4], 1)),
	}
	_, calls["Rollback"] = s.Rollback(1)
	_, calls["HashAt"] = s.HashAt(1)
	_, _, calls["HeightOf"] = s.HeightOf(chain[1].Hash)
	_, calls["FiltersByHeight"] = s.FiltersByHeight(0, 1)
	_, calls["FiltersForStop"] = s.FiltersForStop(chain[4].Hash, 0)
	for name, err := range calls {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	genesis := genChain(40, nil, 1)[0].Hash
	other := genChain(41, nil, 1)[0].Hash

	tests := []struct {
		name    string
		prepare func(t *testing.T, path string) // builds the file before Open
		genesis chainhash.Hash
		err     error
	}{
		{"another network", func(t *testing.T, path string) {
			createStore(t, path, other)
		}, genesis, ErrWrongNetwork},
		{"newer schema version", func(t *testing.T, path string) {
			createStore(t, path, genesis)
			rewriteBolt(t, path, func(tx *bolt.Tx) error {
				return tx.Bucket(bucketMeta).Put(metaSchemaVersion, heightKey(SchemaVersion+1))
			})
		}, genesis, ErrSchemaVersion},
		{"schema version missing", func(t *testing.T, path string) {
			createStore(t, path, genesis)
			rewriteBolt(t, path, func(tx *bolt.Tx) error {
				return tx.Bucket(bucketMeta).Delete(metaSchemaVersion)
			})
		}, genesis, ErrCorrupt},
		{"bucket missing", func(t *testing.T, path string) {
			createStore(t, path, genesis)
			rewriteBolt(t, path, func(tx *bolt.Tx) error {
				return tx.DeleteBucket(bucketStale)
			})
		}, genesis, ErrCorrupt},
		{"another program's bbolt file", func(t *testing.T, path string) {
			rewriteBolt(t, path, func(tx *bolt.Tx) error {
				_, err := tx.CreateBucket([]byte("wallet"))
				return err
			})
		}, genesis, ErrCorrupt},
		{"locked by another Store", func(t *testing.T, path string) {
			held, err := Open(path, genesis, Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = held.Close() })
		}, genesis, ErrLocked},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "filters.db")
			tc.prepare(t, path)
			before := fileBytes(t, path)
			begin := time.Now()
			s, err := Open(path, tc.genesis, Options{NoSync: true, Timeout: 200 * time.Millisecond})
			if err == nil {
				s.Close()
			}
			wantErr(t, "Open", err, tc.err)
			if took := time.Since(begin); took > 5*time.Second {
				t.Fatalf("Open took %s", took)
			}
			if after := fileBytes(t, path); string(after) != string(before) {
				t.Fatal("a failed Open changed the file")
			}
		})
	}

	t.Run("not a bbolt file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "filters.db")
		if err := os.WriteFile(path, []byte(strings.Repeat("not a database ", 1000)), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Open(path, genesis, Options{})
		wantErr(t, "Open of a text file", err, ErrCorrupt)
	})
}

// TestLockedAcrossProcesses runs Open in a child process while this one
// holds the store: the child must give up with ErrLocked after its timeout.
func TestLockedAcrossProcesses(t *testing.T) {
	genesis := genChain(42, nil, 1)[0].Hash
	path := filepath.Join(t.TempDir(), "filters.db")
	s, err := Open(path, genesis, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=lock", helperPathEnv+"="+path, helperGenesisEnv+"="+genesis.String())
	begin := time.Now()
	out, err := runWithDeadline(cmd, testtime.Scale(20*time.Second))
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "open: locked\n") {
		t.Fatalf("helper did not report ErrLocked:\n%s", out)
	}
	t.Logf("child gave up after %s (its timeout 300ms, plus process start)", time.Since(begin))
}

func createStore(t *testing.T, path string, genesis chainhash.Hash) {
	t.Helper()
	s, err := Open(path, genesis, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// rewriteBolt edits the file with bbolt directly, as an older or newer
// build (or another program) would have left it.
func rewriteBolt(t *testing.T, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func fileBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
