package main

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/rs/zerolog"
)

// The soft memory limit is the memorylimit key, or derived from the
// script cache and the workers; GOMEMLIMIT in the environment wins.
func TestMemoryLimit(t *testing.T) {
	orig := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(orig) })
	def := defaultConfig()
	for _, tc := range []struct {
		name string
		cfg  func(c *Config)
		env  string
		want int64 // the runtime's limit afterwards
	}{
		{"derived from the defaults", func(*Config) {}, "", (64 + 8*4 + 24) << 20},
		{"derived, no cache", func(c *Config) { c.ScriptCache, c.Workers = 0, 2 }, "", (2*4 + 24) << 20},
		{"explicit", func(c *Config) { c.MemoryLimit = 200 }, "", 200 << 20},
		{"GOMEMLIMIT wins", func(c *Config) { c.MemoryLimit = 200 }, "1GiB", math.MaxInt64},
	} {
		cfg := def
		tc.cfg(&cfg)
		debug.SetMemoryLimit(math.MaxInt64)
		applyMemoryLimit(cfg, func(k string) string {
			if k == "GOMEMLIMIT" {
				return tc.env
			}
			return ""
		}, zerolog.Nop())
		if got := debug.SetMemoryLimit(-1); got != tc.want {
			t.Errorf("%s: limit %d MiB, want %d MiB", tc.name, got>>20, tc.want>>20)
		}
	}
}
