package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runBench runs cfbench with args and -out=out and returns its standard
// output. When it exits with another code than 0 the test fails with its
// standard error and the last lines of every log it left in out (cfindexd's
// and btcd's), which the test's temporary directory would otherwise take
// away with it.
func runBench(t *testing.T, out string, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(append(args, "-out="+out), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s%s", code, stderr.String(), logTails(out, 30))
	}
	return stdout.Bytes()
}

// logTails returns the last n lines of each *.log file in dir, each under
// its name.
func logTails(dir string, n int) string {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	var b strings.Builder
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		fmt.Fprintf(&b, "\n--- last %d lines of %s:\n%s\n", min(n, len(lines)), filepath.Base(p), strings.Join(lines[max(0, len(lines)-n):], "\n"))
	}
	return b.String()
}
