package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/testtime"
)

// TestLauncherImportsOnlyTheStandardLibrary: `go run ./scripts/regtest`
// compiles only the launcher before it runs, so on a cold build cache it
// speaks within seconds instead of compiling btcd and neutrino in silence.
func TestLauncherImportsOnlyTheStandardLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	deps := strings.Fields(string(out))
	if len(deps) != 1 || deps[0] != "github.com/cfindexd/cfindexd/scripts/regtest" {
		t.Errorf("the launcher depends on %d packages beyond the standard library: %v", len(deps)-1, deps)
	}
}

// fakeGo is a go command whose build sleeps FAKE_GO_SLEEP seconds (a cold
// build cache) and writes, as the demo, a script that prints its arguments
// and exits 3.
const fakeGo = `#!/bin/sh
sleep "${FAKE_GO_SLEEP:-0}"
out=""
while [ $# -gt 0 ]; do
	if [ "$1" = "-o" ]; then out=$2; fi
	shift
done
printf '#!/bin/sh\necho "demo ran with: $*"\nexit 3\n' > "$out"
chmod +x "$out"
`

// TestLauncherSaysWhatItBuilds runs the launcher binary with a go command
// whose build takes a while: it says what it builds within five seconds,
// then runs the demo with its arguments and exits with the demo's status.
func TestLauncherSaysWhatItBuilds(t *testing.T) {
	dir := t.TempDir()
	launcher := filepath.Join(dir, "regtest")
	if out, err := exec.Command("go", "build", "-o", launcher, ".").CombinedOutput(); err != nil {
		t.Fatalf("build the launcher: %v\n%s", err, out)
	}
	fakeDir := filepath.Join(dir, "bin")
	if err := os.Mkdir(fakeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fakeDir, "go"), []byte(fakeGo), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(launcher, "-state", "/some/dir", "stop")
	cmd.Env = append(os.Environ(), "PATH="+fakeDir+string(os.PathListSeparator)+os.Getenv("PATH"), "FAKE_GO_SLEEP=4")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		t.Fatalf("the launcher printed nothing: %v", lines.Err())
	}
	if took := time.Since(start); took > testtime.Scale(5*time.Second) || !strings.HasPrefix(lines.Text(), "building the demo") {
		t.Errorf("first line %q after %v, want what it builds within 5 s", lines.Text(), took)
	}
	var rest []string
	for lines.Scan() {
		rest = append(rest, lines.Text())
	}
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 3 {
		t.Errorf("exit %d (%v), want the demo's 3", code, err)
	}
	if want := "demo ran with: -state /some/dir stop"; len(rest) != 1 || rest[0] != want {
		t.Errorf("after the build the launcher printed %q, want %q", rest, want)
	}
}
