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

// readUnit returns the shipped unit and its ExecStart command line.
func readUnit(t *testing.T) (unit, execStart string) {
	t.Helper()
	raw, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	unit = string(raw)
	for _, line := range strings.Split(unit, "\n") {
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			execStart = v
		}
	}
	return unit, execStart
}

// TestSystemdUnitKeepsSettingsInTheConfigFile: the unit passes cfindexd
// only its configuration file, and as systemd runs it the defaults are
// right for a service.
func TestSystemdUnitKeepsSettingsInTheConfigFile(t *testing.T) {
	unit, execStart := readUnit(t)
	// The configuration file is the one place for settings: the unit
	// passes its path and nothing else, no flag or CFINDEXD_ variable that
	// would silently override it.
	fields := strings.Fields(execStart)
	if len(fields) != 2 || fields[0] != "/usr/local/bin/cfindexd" || fields[1] != "--conf=/etc/cfindexd/cfindexd.toml" {
		t.Fatalf("ExecStart %q: want /usr/local/bin/cfindexd --conf=/etc/cfindexd/cfindexd.toml only", execStart)
	}
	if strings.Contains(unit, "CFINDEXD_") && strings.Contains(unit, "Environment") {
		t.Errorf("the unit sets CFINDEXD_ variables, which override the configuration file")
	}
	if !strings.Contains(unit, "StateDirectory=cfindexd") {
		t.Fatalf("unit lacks StateDirectory=cfindexd, the default datadir")
	}

	// As installed (config.example.toml, every key commented out) and as
	// systemd runs it ($STATE_DIRECTORY set, stderr not a terminal), the
	// store goes to the state directory and logs are JSON; a datadir in
	// the file wins.
	dir := t.TempDir()
	example, err := os.ReadFile("../../config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "cfindexd.toml")
	if err := os.WriteFile(conf, example, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--conf=" + conf}
	systemdEnv := envFrom(map[string]string{"STATE_DIRECTORY": "/var/lib/cfindexd", "HOME": "/nonexistent"})
	cfg, err := loadConfig(args, systemdEnv, &bytes.Buffer{})
	if err != nil {
		t.Fatalf("the unit's command line with the example config: %v", err)
	}
	if cfg.DataDir != "/var/lib/cfindexd" {
		t.Errorf("datadir %q under systemd, want the state directory", cfg.DataDir)
	}
	var logs bytes.Buffer
	logger := newLogger(cfg, &logs)
	logger.Info().Msg("x")
	if !strings.HasPrefix(logs.String(), "{") {
		t.Errorf("log line %q under systemd, want JSON", logs.String())
	}
	if err := os.WriteFile(conf, append(example, []byte("\ndatadir = \"/srv/cfindexd\"\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err := loadConfig(args, systemdEnv, &bytes.Buffer{}); err != nil || cfg.DataDir != "/srv/cfindexd" {
		t.Errorf("datadir in the file: %q, %v", cfg.DataDir, err)
	}

}

// TestSystemdUnitVerifies runs systemd-analyze verify on the shipped unit,
// with ExecStart pointed at the freshly built binary (verify insists the
// binary exists).
func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed (Debian package systemd); .ci/run installs it")
	}
	unit, _ := readUnit(t)
	dir := t.TempDir()
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
