package load

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/cfindexd/cfindexd/internal/p2pclient"
)

// GoalV2Ratio is issue 18's goal for serving over v2: at least 70 % of
// v1's filters/s in the same run.
const GoalV2Ratio = 0.70

// TransportComparison is cfbench serve -transport both: the same daemon
// measured over v1 and over v2 in alternating rounds of one run.
type TransportComparison struct {
	// V1Runs and V2Runs are the rounds' results, in order; V1 and V2
	// their medians by filters/s.
	V1Runs []Result `json:"v1_runs"`
	V2Runs []Result `json:"v2_runs"`
	V1     Result   `json:"v1"`
	V2     Result   `json:"v2"`
	// Ratio is the median over rounds of v2's filters/s over v1's in the
	// same round; CPURatio that of v2's server CPU per filter over v1's.
	Ratio     float64 `json:"v2_v1_filters_per_s_ratio"`
	CPURatio  float64 `json:"v2_v1_server_cpu_per_filter_ratio"`
	MeetsGoal bool    `json:"meets_v2_ratio_goal"`
}

// CompareTransports summarises the rounds over v1 and v2 (paired by
// index; extra rounds of one side count in its median only).
func CompareTransports(v1, v2 []Result) TransportComparison {
	c := TransportComparison{V1Runs: v1, V2Runs: v2, V1: MedianResult(v1), V2: MedianResult(v2)}
	var tput, cpu []float64
	for i := range min(len(v1), len(v2)) {
		tput = append(tput, Ratio(v2[i].FiltersPerS, v1[i].FiltersPerS))
		cpu = append(cpu, Ratio(v2[i].ServerNsPerFilter, v1[i].ServerNsPerFilter))
	}
	c.Ratio, c.CPURatio = Median(tput), Median(cpu)
	c.MeetsGoal = c.Ratio >= GoalV2Ratio && c.V1.Errors == 0 && c.V2.Errors == 0
	return c
}

// WriteTable prints the comparison as tab-separated rows (for a
// tabwriter).
func (c TransportComparison) WriteTable(w io.Writer) {
	fmt.Fprintln(w, "cfindexd by transport\tfilters/s\tgetcfilters p99\terrors\tserver CPU/filter\tclient CPU/filter")
	row := func(name string, r Result) {
		fmt.Fprintf(w, "%s\t%.0f\t%s\t%d\t%.0f ns\t%.0f ns\n", name, r.FiltersPerS, r.FilterLatency.P99.Round(time.Millisecond), r.Errors, r.ServerNsPerFilter, r.ClientNsPerFilter)
	}
	for i := range max(len(c.V1Runs), len(c.V2Runs)) {
		if i < len(c.V1Runs) {
			row(fmt.Sprintf("v1, round %d", i+1), c.V1Runs[i])
		}
		if i < len(c.V2Runs) {
			row(fmt.Sprintf("v2, round %d", i+1), c.V2Runs[i])
		}
	}
	row("v1 (median)", c.V1)
	row("v2 (median)", c.V2)
	verdict := "missed"
	if c.MeetsGoal {
		verdict = "met"
	}
	fmt.Fprintf(w, "ratio v2/v1\tfilters/s %.2f, server CPU per filter %.2f (medians of per-round ratios)\n", c.Ratio, c.CPURatio)
	fmt.Fprintf(w, "goal: v2 ≥ %.0f %% of v1's filters/s\t%s\n", 100*GoalV2Ratio, verdict)
}

// MedianResult is the result of median filters/s (the upper middle of an
// even number).
func MedianResult(rs []Result) Result {
	if len(rs) == 0 {
		return Result{}
	}
	s := slices.SortedFunc(slices.Values(rs), func(a, b Result) int { return cmp.Compare(a.FiltersPerS, b.FiltersPerS) })
	return s[len(s)/2]
}

// Median is the median of xs (the upper middle of an even number).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}

// Ratio is a/b, 0 when b is 0.
func Ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// ParseTransports reads cfbench serve's -transport: "v1", "v2" or "both"
// (v1 then v2).
func ParseTransports(s string) ([]p2pclient.Transport, error) {
	switch s {
	case "v1":
		return []p2pclient.Transport{p2pclient.TransportV1}, nil
	case "v2":
		return []p2pclient.Transport{p2pclient.TransportV2}, nil
	case "both":
		return []p2pclient.Transport{p2pclient.TransportV1, p2pclient.TransportV2}, nil
	}
	return nil, fmt.Errorf("transport %q: want v1, v2 or both", s)
}
