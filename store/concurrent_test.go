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

	stop := make(chan struct{})
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				tip, _ := s.Tip()
				start := uint32(0)
				if tip.Height >= 150 {
					start = tip.Height - 150
				}
				recs, err := s.FiltersForStop(tip.Hash, start)
				if err != nil {
					errs <- fmt.Errorf("FiltersForStop(tip %d): %w", tip.Height, err)
					return
				}
				for i := 1; i < len(recs); i++ {
					if recs[i].Header.PrevBlock != recs[i-1].Hash || recs[i].FilterHeader != filterHeader(recs[i].Filter, recs[i-1].FilterHeader) {
						errs <- fmt.Errorf("read at tip %d: height %d does not link", tip.Height, recs[i].Height)
						return
					}
				}
			}
		}()
	}

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
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if tip, _ := s.Tip(); tip != tipOf(a[399]) {
		t.Fatalf("final tip %+v", tip)
	}
}
