package spbench

import (
	"slices"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/cmd/cfbench/internal/daemon"
)

// TestSummarizeRatioAndTweakRate pins the summary's arithmetic: the rate
// ratio of the median catch-ups, and the tweak rate as the tweaks over the
// CPU the index added.
func TestSummarizeRatioAndTweakRate(t *testing.T) {
	c := Comparison{
		Off:    []daemon.Result{{CatchUp: 2 * time.Second, CPU: 3 * time.Second, PeakRSS: 80e6}, {CatchUp: 4 * time.Second, CPU: 5 * time.Second, PeakRSS: 90e6}},
		On:     []daemon.Result{{CatchUp: 8 * time.Second, CPU: 13 * time.Second, PeakRSS: 120e6}, {CatchUp: 6 * time.Second, CPU: 11 * time.Second, PeakRSS: 100e6}},
		Checks: []IndexCheck{{Tweaks: 1000}},
	}
	c.Summarize(100, 150e6)
	s := c.Summary
	// Medians (the upper of two): off 4 s and 5 s of CPU, on 8 s and 13 s.
	if s.OffBlocksPerS != 25 || s.OnBlocksPerS != 12.5 || s.Ratio != 0.5 || s.MeetsRatio {
		t.Errorf("rates %v / %v, ratio %v (meets %v), want 25 / 12.5, 0.5, not met", s.OffBlocksPerS, s.OnBlocksPerS, s.Ratio, s.MeetsRatio)
	}
	if s.CPURatio != 5.0/13 {
		t.Errorf("CPU ratio %v, want 5/13", s.CPURatio)
	}
	if s.TweakTxPerCoreS != 125 || s.TweakCPUPerTx != 8*time.Millisecond {
		t.Errorf("tweak rate %v/s, %v each; want 125/s, 8ms (1000 tweaks over 8 s of added CPU)", s.TweakTxPerCoreS, s.TweakCPUPerTx)
	}
	if s.OnPeakRSS != 120e6 || !s.MeetsRSS {
		t.Errorf("peak RSS %d (meets %v), want 120 MB within 150 MB", s.OnPeakRSS, s.MeetsRSS)
	}
}

// TestSampleHeightsSpreadOverTweakedBlocks pins the sample: the last
// height with tweaks at or below each of n evenly spaced marks, without
// repeats, the tip's mark last.
func TestSampleHeightsSpreadOverTweakedBlocks(t *testing.T) {
	with := map[uint32]int{5: 1, 6: 2, 40: 1, 99: 3}
	tests := []struct {
		from, to uint32
		n        int
		want     []uint32
	}{
		{1, 100, 4, []uint32{6, 40, 99}}, // marks 25, 50, 75, 100
		{1, 100, 1, []uint32{99}},
		{0, 0, 2, nil},
	}
	for _, tc := range tests {
		if got := sampleHeights(with, tc.from, tc.to, tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("sampleHeights(%d..%d, %d) = %v, want %v", tc.from, tc.to, tc.n, got, tc.want)
		}
	}
}
