package load

import (
	"strings"
	"testing"
)

// The v2/v1 ratio pairs the rounds and takes their median; errors on
// either side fail the goal however fast it was.
func TestCompareTransportsPairsRounds(t *testing.T) {
	r := func(fps, ns float64, errs int) Result {
		return Result{FiltersPerS: fps, ServerNsPerFilter: ns, Errors: errs}
	}
	tests := []struct {
		name     string
		v1, v2   []Result
		ratio    float64
		cpuRatio float64
		meets    bool
	}{
		{"v2 at 80 %", []Result{r(1000, 100, 0), r(2000, 100, 0), r(500, 100, 0)},
			[]Result{r(800, 120, 0), r(1600, 130, 0), r(400, 125, 0)}, 0.8, 1.25, true},
		{"v2 at half", []Result{r(1000, 100, 0)}, []Result{r(500, 200, 0)}, 0.5, 2, false},
		{"fast but failing", []Result{r(1000, 100, 0)}, []Result{r(1000, 100, 3)}, 1, 1, false},
		{"no v2 rounds", []Result{r(1000, 100, 0)}, nil, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := CompareTransports(tt.v1, tt.v2)
			if c.Ratio != tt.ratio || c.CPURatio != tt.cpuRatio || c.MeetsGoal != tt.meets {
				t.Fatalf("ratio %g, CPU ratio %g, meets %v; want %g, %g, %v", c.Ratio, c.CPURatio, c.MeetsGoal, tt.ratio, tt.cpuRatio, tt.meets)
			}
			var b strings.Builder
			c.WriteTable(&b)
			if !strings.Contains(b.String(), "ratio v2/v1") {
				t.Fatalf("table without the ratio:\n%s", b.String())
			}
		})
	}
}
