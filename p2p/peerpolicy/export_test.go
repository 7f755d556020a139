package peerpolicy

import "time"

// Spent returns the work charged so far.
func (w *WorkMeter) Spent() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.spent
}

// Len returns the number of groups held (lapsed ones not yet looked up
// included).
func (d *Discouragement) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.entries)
}
