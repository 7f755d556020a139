package peerpolicy

import (
	"testing"
	"time"
)

// A key's share outlives its uses (an idle peer keeps its low service
// between requests), up to maxIdle idle shares, least recently used
// dropped first; a share in use is never dropped.
func TestShareTableKeepsIdleShares(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	tab := NewShareTable(NewFairQueue(1, time.Second, WallClock(clk.Now)), 2)
	s1, put1 := tab.Get(1)
	again, putAgain := tab.Get(1)
	if again != s1 {
		t.Fatal("two uses of key 1 got different shares")
	}
	putAgain()
	put1()
	_, put2 := tab.Get(2)
	put2()
	if got, _ := tab.Get(1); got != s1 {
		t.Fatal("key 1's idle share was not kept")
	}
	// Key 1 is in use; keys 2 and 3 idle, then 4: 2, the least recently
	// used idle share, is dropped.
	_, put3 := tab.Get(3)
	put3()
	s2 := tab.shareOf(2)
	_, put4 := tab.Get(4)
	put4()
	for _, tc := range []struct {
		key  uint64
		kept bool
	}{{1, true}, {2, false}, {3, true}, {4, true}} {
		if got := tab.shareOf(tc.key) != nil; got != tc.kept {
			t.Errorf("key %d kept %v, want %v", tc.key, got, tc.kept)
		}
	}
	if got, _ := tab.Get(2); got == s2 {
		t.Error("key 2's dropped share came back")
	}
	if tab.Len() != 4 {
		t.Errorf("%d shares held, want 4", tab.Len())
	}
}

// shareOf returns key's share without using it; nil when none is held.
func (t *ShareTable) shareOf(key uint64) *Share {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.byKey[key]; ok {
		return e.share
	}
	return nil
}
