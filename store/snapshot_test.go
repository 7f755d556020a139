package store

import (
	"errors"
	"fmt"
	"testing"
)

// TestSnapshotIsOneState reads through Read while a writer commits block by
// block and rolls back: within one snapshot, the tip's block is at the
// tip's height, the height above it is empty, and headers up to the tip
// link, however the published Store.Tip moves meanwhile.
func TestSnapshotIsOneState(t *testing.T) {
	a := genChain(60, nil, 300)
	s, _ := openTest(t, a[0].Hash)
	commitAll(t, s, a[:50], 50)

	stopReaders := readConcurrently(t, 3, func() error {
		return s.Read(func(v *Snapshot) error {
			tip, ok := v.Tip()
			if !ok {
				return errors.New("empty snapshot")
			}
			if h, err := v.HashAt(tip.Height); err != nil || h != tip.Hash {
				return fmt.Errorf("tip %d %s: hash there %s (%v)", tip.Height, tip.Hash, h, err)
			}
			if _, err := v.HashAt(tip.Height + 1); !errors.Is(err, ErrNotFound) {
				return fmt.Errorf("tip %d: height above it: %v", tip.Height, err)
			}
			height, active, err := v.HeightOf(tip.Hash)
			if err != nil || !active || height != tip.Height {
				return fmt.Errorf("tip %d: HeightOf %d %v %v", tip.Height, height, active, err)
			}
			start := uint32(max(int(tip.Height)-20, 0))
			hs, err := v.Headers(start, tip.Height)
			if err != nil {
				return err
			}
			fhs, err := v.FilterHeadersByHeight(tip.Height, tip.Height)
			if err != nil || fhs[0] != tip.FilterHeader {
				return fmt.Errorf("tip %d: filter header %v (%v)", tip.Height, fhs, err)
			}
			if hs[len(hs)-1].BlockHash() != tip.Hash {
				return fmt.Errorf("tip %d: last header is not the tip's", tip.Height)
			}
			return nil
		})
	})
	for h := 50; h < len(a); h++ {
		if err := s.CommitBatch(a[h : h+1]); err != nil {
			t.Fatal(err)
		}
		if h%7 == 0 {
			if _, err := s.Rollback(uint32(h - 4)); err != nil {
				t.Fatal(err)
			}
			if err := s.CommitBatch(a[h-3 : h+1]); err != nil {
				t.Fatal(err)
			}
		}
	}
	stopReaders()
}
