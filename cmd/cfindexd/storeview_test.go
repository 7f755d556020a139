package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/p2p"
	"github.com/cfindexd/cfindexd/store"
)

// The adapter turns the store's sentinels into p2p's, keeping the store's
// own (for ErrCorrupt: its message, which carries the hint to reindex).
func TestStoreViewErrors(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "filters.db"), chainhash.Hash{1}, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	view := newStoreView(st)
	if _, ok := view.Tip(); ok {
		t.Fatal("empty store has a tip")
	}
	if _, _, err := view.HeightOf(chainhash.Hash{2}); !errors.Is(err, p2p.ErrNotFound) || !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown hash: %v", err)
	}
	if _, err := view.AppendBlockHashes(nil, chainhash.Hash{2}, 0); !errors.Is(err, p2p.ErrNotFound) {
		t.Errorf("unknown stop: %v", err)
	}

	corrupt := fmt.Errorf("filter hash at 12: %w: page 7 unreadable", store.ErrCorrupt)
	got := viewErr(corrupt)
	if !errors.Is(got, p2p.ErrCorrupt) || !errors.Is(got, store.ErrCorrupt) || got.Error() != corrupt.Error() {
		t.Errorf("corrupt: %v", got)
	}
	other := errors.New("disk busy")
	if got := viewErr(other); got != other || errors.Is(got, p2p.ErrCorrupt) {
		t.Errorf("other: %v", got)
	}
}
