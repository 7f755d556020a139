package rangefile

import (
	"context"
	"time"
)

// Warm catalogs, in the background of Documents, the ranges final under
// tip and depth (those not cataloged, or whose tweak coverage changed) and
// the import files ending at the newest of them, so that Documents need
// not: one range at a time, built without holding the
// catalog (Documents answers meanwhile, or returns ErrWarming while more
// than a few ranges are left), and after each range, and each import
// file, a wait of pace or of as long as it took, whichever is longer — at
// most one range per pace and half a core. It returns nil when the catalog
// is warm, ctx's error when ctx ends first, or the error of a read (the
// chain moved: call it again).
func (c *Catalog) Warm(ctx context.Context, read ReadFunc, sp TweakIndex, tip, depth uint32, pace time.Duration) error {
	n := int(FinalCount(tip, depth))
	if n == 0 {
		return nil
	}
	cover := coverage(sp)
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		c.mu.Lock()
		have := len(c.ranges)
		fresh := i < have && c.ranges[i].withTweaks == cover(uint32(i)*Size)
		c.mu.Unlock()
		if fresh {
			continue
		}
		if i > have { // Documents cut the catalog (a reorg) meanwhile
			i = have - 1
			continue
		}
		began := time.Now()
		out, err := c.rangeEntry(read, sp, uint32(i)*Size, nil)
		if err != nil {
			return err
		}
		c.mu.Lock()
		switch { // else Documents cut the catalog meanwhile
		case i < len(c.ranges):
			c.ranges[i] = out
		case i == len(c.ranges):
			c.ranges = append(c.ranges, out)
		}
		c.mu.Unlock()
		if err := rest(ctx, max(pace, time.Since(began))); err != nil {
			return err
		}
	}
	end := End(uint32(n-1) * Size)
	for k := range c.imports {
		c.mu.Lock()
		prev := c.imports[k]
		c.mu.Unlock()
		if prev.obj.Name != "" && prev.end >= end {
			continue
		}
		began := time.Now()
		imp, err := c.importHash(read, k == 1, end, prev)
		if err != nil {
			return err
		}
		c.mu.Lock()
		if cur := &c.imports[k]; cur.obj.Name == "" || cur.end < imp.end {
			*cur = imp
		}
		c.mu.Unlock()
		if err := rest(ctx, max(pace, time.Since(began))); err != nil {
			return err
		}
	}
	return nil
}

// SetWarmer tells the catalog whether a warmer (a loop of Warm) runs:
// while one does, Documents with wait false leaves long work to it and
// returns ErrWarming.
func (c *Catalog) SetWarmer(on bool) {
	c.mu.Lock()
	c.warmed = on
	c.mu.Unlock()
}

// rest waits d, or until ctx ends (its error).
func rest(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
