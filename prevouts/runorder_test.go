package prevouts

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// Turns pass in the order they were handed out, whatever order their
// holders get to them; a nil turn never waits; Done may be repeated.
func TestRunOrderSequencesTurns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o := NewRunOrder()
	const n = 50
	turns := make([]*RunTurn, n)
	for i := range turns {
		turns[i] = o.Next()
	}
	var mu sync.Mutex
	var got []int
	var wg sync.WaitGroup
	for i := n - 1; i >= 0; i-- { // start the last first
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := turns[i].Wait(ctx); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got = append(got, i)
			mu.Unlock()
			turns[i].Done()
			turns[i].Done()
		}()
	}
	wg.Wait()
	for i, v := range got {
		if v != i {
			t.Fatalf("turn order %v", got)
		}
	}
	var none *RunTurn
	if err := none.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	none.Done()
}

// A turn whose predecessor never ends waits only as long as its context.
func TestRunTurnWaitEndsWithContext(t *testing.T) {
	o := NewRunOrder()
	o.Next() // never done
	second := o.Next()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := second.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
}
