package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// spHeightMetric is the series `cfindexd status` reads for its silentpay
// line: /status predates the silent-payment index, /metrics carries it.
const spHeightMetric = "cfindexd_silentpay_indexed_height"

// fetchSPHeight asks the daemon's /metrics at base (http://host:port) for
// how far the silent-payment index reaches; false when the daemon does not
// export it (the index off, empty, or an older cfindexd) or cannot be
// asked.
func fetchSPHeight(ctx context.Context, base string) (uint64, bool) {
	body, err := fetchStatus(ctx, base+"/metrics", "")
	if err != nil {
		return 0, false
	}
	return parseMetric(bytes.NewReader(body), spHeightMetric)
}

// parseMetric returns the value of the unlabelled series name in a
// Prometheus text exposition.
func parseMetric(r io.Reader, name string) (uint64, bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		value, ok := strings.CutPrefix(sc.Text(), name+" ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || !(f >= 0 && f <= float64(^uint32(0))) { // NaN fails both
			return 0, false
		}
		return uint64(f), true
	}
	return 0, false
}

// writeSPStatus prints the silentpay line of `cfindexd status`.
func writeSPStatus(w io.Writer, height uint64, indexed *int64) {
	line := fmt.Sprintf("height %d", height)
	if indexed != nil {
		line += fmt.Sprintf(" of indexed height %d", *indexed)
	}
	fmt.Fprintf(w, "  silentpay %s\n", line)
}
