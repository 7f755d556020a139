package btcdtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recordingTB captures Logf output.
type recordingTB struct {
	testing.TB
	logs []string
}

func (r *recordingTB) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

// TestLogTailPrintsLastLines checks what a failed test shows of btcd's
// output: the last logTailLines lines, in order.
func TestLogTailPrintsLastLines(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "line %03d\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, logFileName), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := &recordingTB{TB: t}
	(&Node{dataDir: dir}).logTail(rec)
	if len(rec.logs) != 1 {
		t.Fatalf("logTail logged %d messages, want 1", len(rec.logs))
	}
	out := rec.logs[0]
	first := fmt.Sprintf("line %03d", 100-logTailLines)
	if !strings.Contains(out, first) || strings.Contains(out, fmt.Sprintf("line %03d", 99-logTailLines)) ||
		!strings.HasSuffix(out, "line 099") {
		t.Fatalf("logTail output does not hold exactly lines %s..099:\n%s", first, out)
	}
}
