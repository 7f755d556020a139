package indexer

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// errPanic marks a panic recovered in one of the follower's own goroutines
// (the job planner, a fetch worker, the committer). It ends Run like a
// store failure: the daemon stops with one line instead of a Go panic
// trace, and nothing half-done is committed.
var errPanic = errors.New("panic")

// recovering wraps the body of a pipeline goroutine: a panic is logged at
// error with its stack and returned as an error wrapping errPanic.
func (f *Follower) recovering(name string, fn func() error) func() error {
	return func() (err error) {
		defer func() {
			if v := recover(); v != nil {
				f.log.Error().Str("goroutine", name).Str("panic", fmt.Sprint(v)).Str("stack", string(debug.Stack())).Msg("indexer goroutine panicked")
				err = fmt.Errorf("%w in the indexer's %s: %v", errPanic, name, v)
			}
		}()
		return fn()
	}
}
