package indexer

import "testing"

// Runs start at one block until a size is known, then hold about runBytes
// of blocks, never more than the cap and never fewer than one.
func TestRunSizer(t *testing.T) {
	tests := []struct {
		name   string
		sizes  []int
		maxRun int
		want   int
	}{
		{name: "unknown size", maxRun: maxRunBlocks, want: 1},
		{name: "source without runs", sizes: []int{300}, maxRun: 1, want: 1},
		{name: "empty blocks", sizes: []int{250, 250, 250}, maxRun: maxRunBlocks, want: maxRunBlocks},
		{name: "256 kB blocks", sizes: []int{256 << 10}, maxRun: maxRunBlocks, want: 8},
		{name: "full mainnet blocks", sizes: []int{1800 << 10, 1900 << 10}, maxRun: maxRunBlocks, want: 1},
		{name: "4 MB blocks", sizes: []int{4 << 20}, maxRun: maxRunBlocks, want: 1},
		{name: "average follows growth", sizes: []int{250, 1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20}, maxRun: maxRunBlocks, want: 2},
		{name: "one large block shrinks runs at once", sizes: []int{250, 250, 250, 1 << 20}, maxRun: maxRunBlocks, want: 2},
		{name: "runs grow back slowly", sizes: []int{1 << 20, 250, 250, 250}, maxRun: maxRunBlocks, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s runSizer
			for _, size := range tt.sizes {
				s.observe(size)
			}
			if got := s.next(tt.maxRun); got != tt.want {
				t.Errorf("next = %d, want %d (average %d bytes)", got, tt.want, s.avg.Load())
			}
		})
	}
}
