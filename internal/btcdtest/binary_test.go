package btcdtest

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// TestBinaryBuildsOnceIntoEmptyCache builds btcd from scratch into an empty
// cache directory from two goroutines at once: both get the same working
// binary, and no temporary file is left behind.
func TestBinaryBuildsOnceIntoEmptyCache(t *testing.T) {
	if testing.Short() {
		t.Skip("builds btcd from source")
	}
	t.Parallel()
	// Build the shared binary first: on a cold machine that warms Go's build
	// cache, so the builds below only link instead of compiling btcd again
	// next to every other test's Binary call.
	Binary(t)
	dir := t.TempDir()
	var wg sync.WaitGroup
	paths := make([]string, 2)
	errs := make([]error, 2)
	for i := range paths {
		wg.Go(func() { paths[i], errs[i] = buildBinaryIn(dir) })
	}
	wg.Wait()
	for i := range paths {
		if errs[i] != nil {
			t.Fatalf("build %d: %v", i, errs[i])
		}
	}
	if paths[0] != paths[1] {
		t.Fatalf("builds returned %q and %q", paths[0], paths[1])
	}
	out, err := exec.Command(paths[0], "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", paths[0], err, out)
	}
	if !strings.Contains(string(out), "btcd") {
		t.Fatalf("--version output %q does not name btcd", out)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("temporary build file %s left in cache", e.Name())
		}
	}
}
