package httpapi

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/store"
)

// fakeView is an in-memory ChainView with the store's semantics: active
// records by height, stale records by hash, ErrNotFound for the rest.
type fakeView struct {
	mu     sync.RWMutex
	active []BlockRecord
	stale  map[chainhash.Hash]BlockRecord
	size   int64
	// rangeReads counts range reads, so tests can prove a 304 read no
	// data.
	rangeReads atomic.Int64
}

var _ ChainView = (*fakeView)(nil)

func newFakeView() *fakeView {
	return &fakeView{stale: make(map[chainhash.Hash]BlockRecord), size: 4096}
}

// commit appends recs to the active chain.
func (f *fakeView) commit(recs ...BlockRecord) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range recs {
		if int(r.Height) != len(f.active) {
			panic(fmt.Sprintf("fake commit at %d onto %d blocks", r.Height, len(f.active)))
		}
		f.active = append(f.active, r)
		delete(f.stale, r.Hash)
	}
}

// addStale records a block outside the active chain.
func (f *fakeView) addStale(r BlockRecord) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stale[r.Hash] = r
}

// rollback disconnects every block above height, keeping them as stale.
func (f *fakeView) rollback(height uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.active[height+1:] {
		f.stale[r.Hash] = r
	}
	f.active = f.active[:height+1]
}

// fakeState reads a fakeView whose lock the caller holds.
type fakeState struct{ f *fakeView }

// Read implements ChainView: fn reads under one read lock, so it sees one
// state.
func (f *fakeView) Read(fn func(ChainReader) error) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return fn(fakeState{f})
}

func (f *fakeView) Tip() (Tip, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return fakeState{f}.Tip()
}

func (f *fakeView) HashAt(height uint32) (chainhash.Hash, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return fakeState{f}.HashAt(height)
}

func (f *fakeView) HeightOf(hash chainhash.Hash) (uint32, bool, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return fakeState{f}.HeightOf(hash)
}

func (f *fakeView) HeaderAt(height uint32) (wire.BlockHeader, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return fakeState{f}.HeaderAt(height)
}

func (f *fakeView) Headers(start, end uint32) ([]wire.BlockHeader, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return fakeState{f}.Headers(start, end)
}

func (f *fakeView) FilterByHash(hash chainhash.Hash) (BlockRecord, bool, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return fakeState{f}.FilterByHash(hash)
}

func (f *fakeView) FiltersByHeight(start, end uint32) ([]BlockRecord, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return fakeState{f}.FiltersByHeight(start, end)
}

func (f *fakeView) FilterHeadersByHeight(start, end uint32) ([]chainhash.Hash, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return fakeState{f}.FilterHeadersByHeight(start, end)
}

func (f *fakeView) SizeBytes() int64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.size
}

func (s fakeState) Tip() (Tip, bool) {
	if len(s.f.active) == 0 {
		return Tip{}, false
	}
	r := s.f.active[len(s.f.active)-1]
	return Tip{Height: r.Height, Hash: r.Hash, FilterHeader: r.FilterHeader}, true
}

func (s fakeState) HashAt(height uint32) (chainhash.Hash, error) {
	if int(height) >= len(s.f.active) {
		return chainhash.Hash{}, fmt.Errorf("hash at %d: %w", height, ErrNotFound)
	}
	return s.f.active[height].Hash, nil
}

func (s fakeState) HeaderAt(height uint32) (wire.BlockHeader, error) {
	if int(height) >= len(s.f.active) {
		return wire.BlockHeader{}, fmt.Errorf("header at %d: %w", height, ErrNotFound)
	}
	return s.f.active[height].Header, nil
}

func (s fakeState) HeightOf(hash chainhash.Hash) (uint32, bool, error) {
	for _, r := range s.f.active {
		if r.Hash == hash {
			return r.Height, true, nil
		}
	}
	if r, ok := s.f.stale[hash]; ok {
		return r.Height, false, nil
	}
	return 0, false, fmt.Errorf("height of %s: %w", hash, ErrNotFound)
}

func (s fakeState) checkRange(start, end uint32) error {
	if start > end {
		return fmt.Errorf("%d..%d: %w", start, end, store.ErrBadRange)
	}
	if end-start >= MaxRange {
		return fmt.Errorf("%d..%d: %w", start, end, store.ErrRangeTooLarge)
	}
	if int(end) >= len(s.f.active) {
		return fmt.Errorf("%d..%d: %w", start, end, ErrNotFound)
	}
	s.f.rangeReads.Add(1)
	return nil
}

func (s fakeState) Headers(start, end uint32) ([]wire.BlockHeader, error) {
	if err := s.checkRange(start, end); err != nil {
		return nil, err
	}
	out := make([]wire.BlockHeader, 0, end-start+1)
	for _, r := range s.f.active[start : end+1] {
		out = append(out, r.Header)
	}
	return out, nil
}

func (s fakeState) FilterByHash(hash chainhash.Hash) (BlockRecord, bool, error) {
	for _, r := range s.f.active {
		if r.Hash == hash {
			return r, true, nil
		}
	}
	if r, ok := s.f.stale[hash]; ok {
		return r, false, nil
	}
	return BlockRecord{}, false, fmt.Errorf("filter of %s: %w", hash, ErrNotFound)
}

func (s fakeState) FiltersByHeight(start, end uint32) ([]BlockRecord, error) {
	if err := s.checkRange(start, end); err != nil {
		return nil, err
	}
	return append([]BlockRecord(nil), s.f.active[start:end+1]...), nil
}

func (s fakeState) FilterHeadersByHeight(start, end uint32) ([]chainhash.Hash, error) {
	if err := s.checkRange(start, end); err != nil {
		return nil, err
	}
	out := make([]chainhash.Hash, 0, end-start+1)
	for _, r := range s.f.active[start : end+1] {
		out = append(out, r.FilterHeader)
	}
	return out, nil
}
