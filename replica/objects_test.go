package replica

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/cfindexd/cfindexd/internal/wirescan"
	"github.com/cfindexd/cfindexd/replica/layouttest"
	"github.com/cfindexd/cfindexd/store"
)

// FuzzParseFilters: any bytes split into n filters that re-encode to the
// same bytes, or fail; never a panic.
func FuzzParseFilters(f *testing.F) {
	c := sharedChain()
	f.Add(c.ranges(f)[0].Filters[:200], 3)
	f.Add([]byte{0xfe, 0xff, 0xff, 0xff, 0x7f, 1}, 1)
	f.Add([]byte{1, 0, 1, 0}, 2)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		if n < 0 || n > 4000 {
			return
		}
		filters, err := parseFilters(b, n)
		if err != nil {
			return
		}
		var again []byte
		for _, fl := range filters {
			if len(fl) == 0 || len(fl) > store.MaxFilterSize {
				t.Fatalf("filter of %d bytes accepted", len(fl))
			}
			again = wirescan.AppendCompactSize(again, uint64(len(fl)))
			again = append(again, fl...)
		}
		if len(filters) != n || !bytes.Equal(again, b) {
			t.Fatal("parse does not round-trip")
		}
	})
}

// TestParseFiltersAllocations: a filters object that declares huge
// lengths costs only the slice headers of the filters asked for.
func TestParseFiltersAllocations(t *testing.T) {
	hostile := bytes.Repeat([]byte{0xfe, 0xff, 0xff, 0x3f, 0x00}, 2000)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := parseFilters(hostile, layouttest.RangeSize); err == nil {
		t.Fatal("accepted")
	}
	runtime.ReadMemStats(&after)
	if a := after.TotalAlloc - before.TotalAlloc; a > 24*layouttest.RangeSize+4096 {
		t.Fatalf("%d bytes allocated for %d bytes of input", a, len(hostile))
	}
}
