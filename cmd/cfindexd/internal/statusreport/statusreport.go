// Package statusreport writes `cfindexd status`'s report for a person
// from the daemon's /status (httpapi.StatusReport) and the silent-payment
// height of its /metrics. It lives apart from cmd/cfindexd's main package
// to keep that within its size.
package statusreport

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/cfindexd/cfindexd/httpapi"
)

// SPHeightMetric is the series `cfindexd status` reads for its silentpay
// line: /status predates the silent-payment index, /metrics carries it.
const SPHeightMetric = "cfindexd_silentpay_indexed_height"

// Write prints the report for a person, one aspect per line, with
// the silent-payment index's height when the daemon exports one (sp).
func Write(w io.Writer, r httpapi.StatusReport, sp *uint64) {
	up := time.Duration(r.UptimeSeconds * float64(time.Second)).Round(time.Second)
	fmt.Fprintf(w, "cfindexd %s (commit %s, %s), up %s\n", r.Version, r.Commit, r.GoVersion, up)
	fmt.Fprintf(w, "  chain     %s\n", r.Chain)
	node := r.Node.Address
	if r.Node.Kind != "" {
		node += "  " + r.Node.Kind
		if r.Node.Version != "" {
			node += " " + r.Node.Version
		}
	}
	if r.Node.Reachable {
		node += "  reachable"
	} else {
		node += "  NOT reachable"
	}
	fmt.Fprintf(w, "  node      %s\n", node)
	if r.Node.Error != "" {
		fmt.Fprintf(w, "            last error: %s\n", r.Node.Error)
	}
	if r.Node.PrevoutSource != "" {
		fmt.Fprintf(w, "  prevouts  %s\n", r.Node.PrevoutSource)
	}
	indexed := "nothing yet"
	if r.IndexedHeight != nil {
		indexed = fmt.Sprintf("height %d", *r.IndexedHeight)
	}
	if r.NodeHeight != nil {
		indexed += fmt.Sprintf(" of node height %d", *r.NodeHeight)
	}
	if r.ProgressPct != nil {
		indexed += fmt.Sprintf(" (%.1f %%)", *r.ProgressPct)
	}
	fmt.Fprintf(w, "  indexed   %s\n", indexed)
	if r.IndexedHash != "" {
		fmt.Fprintf(w, "  tip       %s\n", r.IndexedHash)
	}
	if sp != nil {
		writeSP(w, *sp, r.IndexedHeight)
	}
	fmt.Fprintf(w, "  peers     %d light client(s) over P2P\n", r.Peers)
	for _, t := range r.Transports {
		fmt.Fprintf(w, "    %s      %d peer(s), %s in, %s out\n", t.Transport, t.Peers, HumanBytes(t.BytesReceived), HumanBytes(t.BytesSent))
	}
	fmt.Fprintf(w, "  store     %s  %s\n", HumanBytes(r.StoreSizeBytes), r.StorePath)
}

// ParseMetric returns the value of the unlabelled series name in a
// Prometheus text exposition.
func ParseMetric(r io.Reader, name string) (uint64, bool) {
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

// writeSP prints the silentpay line of `cfindexd status`.
func writeSP(w io.Writer, height uint64, indexed *int64) {
	line := fmt.Sprintf("height %d", height)
	if indexed != nil {
		line += fmt.Sprintf(" of indexed height %d", *indexed)
	}
	fmt.Fprintf(w, "  silentpay %s\n", line)
}

// HumanBytes renders a size with a binary unit.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
