package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/store/storefile"
)

// TestMoveAside: a store in use is refused (ErrLocked) and left alone; a
// store too damaged to open is renamed to the backup (or removed) without
// being opened, after which Open creates a new empty store; no file is no
// error.
func TestMoveAside(t *testing.T) {
	chain := genChain(97, nil, 50)
	dir := t.TempDir()
	path := filepath.Join(dir, "filters.db")
	backup := filepath.Join(dir, "filters.db.old")

	if moved, err := storefile.MoveAside(path, backup, 0); moved || err != nil {
		t.Fatalf("no file: moved %v, %v", moved, err)
	}
	s, err := Open(path, chain[0].Hash, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	commitAll(t, s, chain, 50)
	if _, err := storefile.MoveAside(path, backup, 100*time.Millisecond); !errors.Is(err, ErrLocked) {
		t.Fatalf("store in use: %v, want ErrLocked", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("a refused MoveAside touched the store: %v", err)
	}
	s.Close()

	patchFile(t, path, 0, make([]byte, 2*4096)) // both meta pages: Open refuses it
	want := fileBytes(t, path)
	if _, err := Open(path, chain[0].Hash, Options{NoSync: true}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open of the damaged store: %v", err)
	}
	if moved, err := storefile.MoveAside(path, backup, 0); !moved || err != nil {
		t.Fatalf("MoveAside: moved %v, %v", moved, err)
	}
	if got := fileBytes(t, backup); string(got) != string(want) {
		t.Fatal("the backup differs from the store")
	}
	if _, err := storefile.MoveAside(path, backup, 0); err != nil {
		t.Fatalf("nothing left to move: %v", err)
	}
	s, err = Open(path, chain[0].Hash, Options{NoSync: true})
	if err != nil {
		t.Fatalf("Open after MoveAside: %v", err)
	}
	if _, ok := s.Tip(); ok {
		t.Fatal("the new store has a tip")
	}
	s.Close()
	// An existing backup is never overwritten; an empty backup removes.
	if _, err := storefile.MoveAside(path, backup, 0); err == nil {
		t.Fatal("MoveAside replaced an existing backup")
	}
	if moved, err := storefile.MoveAside(path, "", 0); !moved || err != nil {
		t.Fatalf("remove: moved %v, %v", moved, err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("store still there: %v", err)
	}
}
