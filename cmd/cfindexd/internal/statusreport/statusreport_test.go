package statusreport

import (
	"bytes"
	"strings"
	"testing"
)

// TestStatusSilentPaymentLine: status reads the index's height from the
// metrics text (only the unlabelled series of that exact name) and prints
// it beside the filters' height.
func TestStatusSilentPaymentLine(t *testing.T) {
	indexed := int64(812)
	for _, tc := range []struct {
		name, metrics string
		indexed       *int64
		want          string // "" when no line is printed
	}{
		{"with the filters' height", "# HELP x\ncfindexd_indexed_height 812\ncfindexd_silentpay_indexed_height 640\n", &indexed, "  silentpay height 640 of indexed height 812\n"},
		{"alone", "cfindexd_silentpay_indexed_height 1\n", nil, "  silentpay height 1\n"},
		{"index off", "cfindexd_indexed_height 812\ncfindexd_silentpay_indexed_height_x 3\n", &indexed, ""},
		{"garbage value", "cfindexd_silentpay_indexed_height NaN\n", &indexed, ""},
		{"negative", "cfindexd_silentpay_indexed_height -1\n", &indexed, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if h, ok := ParseMetric(strings.NewReader(tc.metrics), SPHeightMetric); ok {
				writeSP(&out, h, tc.indexed)
			}
			if out.String() != tc.want {
				t.Errorf("got %q, want %q", out.String(), tc.want)
			}
		})
	}
}
