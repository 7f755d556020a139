package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const unitPath = "../../contrib/systemd/cfindexd.service"

// TestSystemdUnitVerifies runs systemd-analyze verify on the shipped unit,
// with ExecStart pointed at the freshly built binary (verify insists the
// binary exists), and checks that the unit's own command line is one
// cfindexd accepts.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed (Debian package systemd); .ci/run installs it")
	}
	raw, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	unit := string(raw)
	var execStart string
	for _, line := range strings.Split(unit, "\n") {
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			execStart = v
		}
	}
	fields := strings.Fields(execStart)
	if len(fields) < 2 || fields[0] != "/usr/local/bin/cfindexd" {
		t.Fatalf("ExecStart %q: want /usr/local/bin/cfindexd with flags", execStart)
	}

	// The flags must parse, with the config file replaced by a real one.
	dir := t.TempDir()
	conf := filepath.Join(dir, "cfindexd.toml")
	if err := os.WriteFile(conf, []byte("chain = \"regtest\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, f := range fields[1:] {
		if strings.HasPrefix(f, "--config=") {
			f = "--config=" + conf
		}
		args = append(args, f)
	}
	if _, err := loadConfig(args, envFrom(nil), &bytes.Buffer{}); err != nil {
		t.Fatalf("the unit's flags are rejected: %v", err)
	}

	local := strings.Replace(unit, "ExecStart=/usr/local/bin/cfindexd", "ExecStart="+daemonBinary, 1)
	path := filepath.Join(dir, "cfindexd.service")
	if err := os.WriteFile(path, []byte(local), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	for _, want := range []string{"ProtectSystem=", "PrivateTmp=true", "NoNewPrivileges=true", "MemoryDenyWriteExecute=true", "Restart=on-failure", "StateDirectory=cfindexd", "User=cfindexd"} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit lacks %s", want)
		}
	}
}
