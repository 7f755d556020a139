package store

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/testtime"
)

// TestReadersDuringWrites runs readers against a writer that commits and
// rolls back: every read must see one committed state (a linked chain up to
// a tip the writer produced), and waiters on TipChanged must wake.
func TestReadersDuringWrites(t *testing.T) {
	a := genChain(50, nil, 400)
	b := genChain(51, &a[199], 50)
	s, _ := openTest(t, a[0].Hash)
	commitAll(t, s, a[:100], 100)

	stopReaders := readConcurrently(t, 3, func() error {
		tip, _ := s.Tip()
		start := uint32(0)
		if tip.Height >= 150 {
			start = tip.Height - 150
		}
		recs, err := s.FiltersForStop(tip.Hash, start)
		if err != nil {
			return fmt.Errorf("FiltersForStop(tip %d): %w", tip.Height, err)
		}
		for i := 1; i < len(recs); i++ {
			if recs[i].Header.PrevBlock != recs[i-1].Hash || recs[i].FilterHeader != filterHeader(recs[i].Filter, recs[i-1].FilterHeader) {
				return fmt.Errorf("read at tip %d: height %d does not link", tip.Height, recs[i].Height)
			}
		}
		return nil
	})

	// The writer: extend A, reorg to B and back, waiting on TipChanged from
	// a second goroutine for each step.
	woke := make(chan struct{}, 64)
	steps := []func() error{
		func() error { return s.CommitBatch(a[100:200]) },
		func() error { return s.CommitBatch(b) },
		func() error { _, err := s.Rollback(199); return err },
		func() error { return s.CommitBatch(a[200:300]) },
		func() error { _, err := s.Rollback(150); return err },
		func() error { return s.CommitBatch(a[151:400]) },
	}
	for i, step := range steps {
		ch := s.TipChanged()
		go func() {
			<-ch
			woke <- struct{}{}
		}()
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		select {
		case <-woke:
		case <-time.After(testtime.Scale(10 * time.Second)):
			t.Fatalf("step %d: TipChanged waiter did not wake", i)
		}
	}
	stopReaders()
	if tip, _ := s.Tip(); tip != tipOf(a[399]) {
		t.Fatalf("final tip %+v", tip)
	}
}

// readConcurrently runs read in a loop on each of n goroutines until the
// function it returns is called, which waits for them and fails the test
// with every error read returned (a goroutine stops at its first).
func readConcurrently(t *testing.T, n int, read func() error) (stop func()) {
	done := make(chan struct{})
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if err := read(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	return func() {
		close(done)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
}
