package headers

import (
	"slices"
	"testing"
)

func TestCheckpointHeights(t *testing.T) {
	tests := []struct {
		stop uint32
		want []uint32
	}{
		{0, []uint32{}},
		{1, []uint32{}},
		{999, []uint32{}},
		{1000, []uint32{1000}},
		{1001, []uint32{1000}},
		{1999, []uint32{1000}},
		{2000, []uint32{1000, 2000}},
		{14131, []uint32{1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000, 11000, 12000, 13000, 14000}},
	}
	for _, tc := range tests {
		if got := CheckpointHeights(tc.stop); !slices.Equal(got, tc.want) {
			t.Errorf("CheckpointHeights(%d) = %v, want %v", tc.stop, got, tc.want)
		}
	}
}

// TestCheckpointHeightsLargeStop pins the count and the end points for a
// mainnet-sized and the largest possible stop height.
func TestCheckpointHeightsLargeStop(t *testing.T) {
	for _, stop := range []uint32{900_123, 1<<32 - 1} {
		got := CheckpointHeights(stop)
		if uint32(len(got)) != stop/CheckpointInterval {
			t.Fatalf("stop %d: %d checkpoints, want %d", stop, len(got), stop/CheckpointInterval)
		}
		last := got[len(got)-1]
		if got[0] != CheckpointInterval || last > stop || stop-last >= CheckpointInterval {
			t.Fatalf("stop %d: first %d last %d", stop, got[0], last)
		}
	}
}
