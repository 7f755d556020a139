package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// Every key tagged as a path expands ~ and $HOME (from the environment
// cfindexd was given), whichever source set it; ~user is refused.
func TestPathKeysExpandHome(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home, "CFINDEXD_BITCOINDATADIR": "${HOME}/btc"}
	file := writeFile(t, "c.toml", "rpccert = \"~/.btcd/rpc.cert\"\n")
	cfg, err := loadConfig([]string{"--conf=" + file, "--datadir=~", "--rpccookiefile=$HOME/x/.cookie", "--blocksdir=~/core/blocks"}, envFrom(env), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"datadir":        home,
		"bitcoindatadir": filepath.Join(home, "btc"),
		"rpccookiefile":  filepath.Join(home, "x", ".cookie"),
		"rpccert":        filepath.Join(home, ".btcd", "rpc.cert"),
		"blocksdir":      filepath.Join(home, "core", "blocks"),
	}
	paths := 0
	for _, k := range configKeys() {
		if !k.Path {
			continue
		}
		paths++
		if got := cfg.keyValue(k); got != want[k.Name] {
			t.Errorf("%s = %q, want %q", k.Name, got, want[k.Name])
		}
	}
	if paths != len(want) {
		t.Errorf("%d path keys, test knows %d: tag new path keys path:\"true\" and add them here", paths, len(want))
	}
	// A key named like a path must be tagged as one.
	for _, k := range configKeys() {
		if regexp.MustCompile(`(dir|file|cert|path)$`).MatchString(k.Name) && !k.Path {
			t.Errorf("key %s looks like a path but lacks the tag path:\"true\" (~ and $HOME would not expand)", k.Name)
		}
	}
	// The default datadir expands too.
	cfg, err = loadConfig(nil, envFrom(map[string]string{"HOME": home}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DataDir != filepath.Join(home, ".cfindexd") || cfg.BitcoinDataDir != filepath.Join(home, ".bitcoin") {
		t.Errorf("defaults: datadir %q, bitcoindatadir %q", cfg.DataDir, cfg.BitcoinDataDir)
	}
	// blocksdir's default derives from the expanded bitcoindatadir.
	if cfg.BlocksDir != filepath.Join(home, ".bitcoin", "blocks") {
		t.Errorf("default blocksdir %q", cfg.BlocksDir)
	}
	for _, bad := range []string{"--datadir=~bob/data", "--rpccert=~root"} {
		var stderr bytes.Buffer
		if code := run([]string{bad}, envFrom(map[string]string{"HOME": home}), &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), "~user is not supported") {
			t.Errorf("%s: exit %d, %q", bad, code, stderr.String())
		}
	}
	// $HOMEDIR is not $HOME.
	if got, err := expandPath("/a/$HOMEDIR/b", home); err != nil || got != "/a/$HOMEDIR/b" {
		t.Errorf("$HOMEDIR: %q, %v", got, err)
	}
}

// Without --conf or CFINDEXD_CONFIG, <datadir>/cfindexd.toml is read when
// it exists (the datadir as flags or environment name it); --conf is
// --config; STATE_DIRECTORY (systemd) is the default datadir, below the
// file's datadir.
func TestConfigFileLocation(t *testing.T) {
	dataDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dataDir, defaultConfigName), []byte("chain = \"signet\"\nworkers = 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, path, err := loadConfigFrom([]string{"--datadir=" + dataDir}, envFrom(nil), &bytes.Buffer{})
	if err != nil || path != filepath.Join(dataDir, defaultConfigName) || cfg.Chain != "signet" || cfg.Workers != 3 {
		t.Errorf("flag datadir: %v, file %q, chain %s", err, path, cfg.Chain)
	}
	cfg, _, err = loadConfigFrom(nil, envFrom(map[string]string{"CFINDEXD_DATADIR": dataDir}), &bytes.Buffer{})
	if err != nil || cfg.Chain != "signet" {
		t.Errorf("env datadir: %v, chain %s", err, cfg.Chain)
	}
	cfg, _, err = loadConfigFrom(nil, envFrom(map[string]string{"STATE_DIRECTORY": dataDir + ":/other"}), &bytes.Buffer{})
	if err != nil || cfg.Chain != "signet" || cfg.DataDir != dataDir {
		t.Errorf("STATE_DIRECTORY: %v, chain %s, datadir %s", err, cfg.Chain, cfg.DataDir)
	}
	// An explicit file wins over the datadir's, and its datadir over
	// STATE_DIRECTORY.
	other := writeFile(t, "o.toml", "chain = \"regtest\"\ndatadir = \"/srv/cf\"\n")
	for _, flagName := range []string{"--conf", "--config"} {
		cfg, path, err = loadConfigFrom([]string{flagName + "=" + other}, envFrom(map[string]string{"STATE_DIRECTORY": dataDir}), &bytes.Buffer{})
		if err != nil || path != other || cfg.Chain != "regtest" || cfg.DataDir != "/srv/cf" {
			t.Errorf("%s: %v, file %q, chain %s, datadir %s", flagName, err, path, cfg.Chain, cfg.DataDir)
		}
	}
	// No file in the datadir: defaults.
	cfg, path, err = loadConfigFrom([]string{"--datadir=" + t.TempDir()}, envFrom(nil), &bytes.Buffer{})
	if err != nil || path != "" || cfg.Chain != "main" {
		t.Errorf("empty datadir: %v, file %q, chain %s", err, path, cfg.Chain)
	}
}

// A CFINDEXD_* variable that is no key is refused like an unknown key;
// CFINDEXD_CONFIG and the CFINDEXD_TEST_ variables of the tests are not.
func TestUnknownEnvironmentVariablesAreRefused(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		code int
		want string
	}{
		{map[string]string{"CFINDEXD_RPCPROT": "18443"}, 2, "CFINDEXD_RPCPROT: unknown variable"},
		{map[string]string{"CFINDEXD_": "x"}, 2, "unknown variable"},
		{map[string]string{"CFINDEXD_WORKERS": "3", "CFINDEXD_CONFIG": "", "CFINDEXD_TEST_LOG": "1", "OTHER_X": "1", "cfindexd_workers": "x"}, 0, ""},
	} {
		var stderr bytes.Buffer
		code := run([]string{"--version"}, envFrom(tc.env), &bytes.Buffer{}, &stderr)
		if code != tc.code || (tc.want != "" && (!strings.Contains(stderr.String(), tc.want) || strings.Count(stderr.String(), "\n") != 1)) {
			t.Errorf("%v: exit %d, %q; want exit %d naming %q", tc.env, code, stderr.String(), tc.code, tc.want)
		}
	}
}

// --version names the release, the commit (with +dirty for a modified
// tree, "unknown" when the build recorded none) and the Go version.
func TestVersionLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "cfindexd " + version + " (commit unknown, " + runtime.Version() + ")"},
		{"go run", &debug.BuildInfo{GoVersion: "go1.26.0"}, true, "cfindexd " + version + " (commit unknown, go1.26.0)"},
		{"clean", &debug.BuildInfo{GoVersion: "go1.26.0", Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "false"}}}, true,
			"cfindexd " + version + " (commit abc123, go1.26.0)"},
		{"dirty", &debug.BuildInfo{GoVersion: "go1.26.0", Settings: []debug.BuildSetting{{Key: "vcs.modified", Value: "true"}, {Key: "vcs.revision", Value: "abc123"}}}, true,
			"cfindexd " + version + " (commit abc123+dirty, go1.26.0)"},
	} {
		if got := buildVersionFrom(tc.info, tc.ok).String(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// The real binary: the commit is what git says, when the build
	// recorded it (a checkout's .git directory and -buildvcs), else
	// "unknown".
	code, out, _ := runCLI(t, "--version")
	m := regexp.MustCompile(`^cfindexd ` + regexp.QuoteMeta(version) + ` \(commit ([0-9a-f]{40}(\+dirty)?|unknown), go[0-9.]+\S*\)\n$`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("--version: exit %d, %q", code, out)
	}
	t.Logf("--version: %s", strings.TrimSpace(out))
}

// Log lines carry millisecond timestamps in JSON and on the console, set
// by the logger's own hook (zerolog's package-level formats are left as
// they are), and durations as strings with their unit.
func TestLogTimestampsAndDurations(t *testing.T) {
	before := zerolog.TimeFieldFormat
	var buf bytes.Buffer
	log := newLogger(Config{LogLevel: "info", LogFormat: "json"}, &buf)
	log.Info().Str("retry_in", logDur(850207112*time.Nanosecond)).Str("eta", logDur(7000*time.Second)).Msg("x")
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	ts, _ := m["time"].(string)
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)$`).MatchString(ts) {
		t.Errorf("JSON time %q: want RFC 3339 with milliseconds", ts)
	}
	if m["retry_in"] != "850ms" || m["eta"] != "1h56m40s" {
		t.Errorf("durations %v, %v", m["retry_in"], m["eta"])
	}
	if zerolog.TimeFieldFormat != before {
		t.Errorf("zerolog.TimeFieldFormat changed to %q", zerolog.TimeFieldFormat)
	}

	buf.Reset()
	at := time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.Local)
	console := newLogger(Config{LogLevel: "info", LogFormat: "console"}, &buf).Hook(timestampHook{now: func() time.Time { return at }})
	console.Info().Msg("hello")
	if !strings.Contains(buf.String(), "03:04:05.678") {
		t.Errorf("console line %q: want the milliseconds of the event", buf.String())
	}
}

// A node's start time comes from its uptime (whole seconds) within the
// probe's round trip: a slow probe of a node that did not restart is not a
// restart; a later start beyond that uncertainty is.
func TestNodeStartWindow(t *testing.T) {
	t0 := time.Unix(10_000, 0)
	first := nodeStartWindow(t0, t0.Add(50*time.Millisecond), time.Hour)
	for _, tc := range []struct {
		name      string
		probe     startWindow
		restarted bool
	}{
		{"same node, fast probe", nodeStartWindow(t0.Add(5*time.Second), t0.Add(5*time.Second+10*time.Millisecond), time.Hour+5*time.Second), false},
		{"same node, 4 s probe on a loaded box", nodeStartWindow(t0.Add(10*time.Second), t0.Add(14*time.Second), time.Hour+10*time.Second), false},
		{"same node, uptime just ticked", nodeStartWindow(t0.Add(10*time.Second), t0.Add(10*time.Second), time.Hour+9*time.Second), false},
		{"restarted 10 s ago", nodeStartWindow(t0.Add(time.Minute), t0.Add(time.Minute), 10*time.Second), true},
		{"unknown (no uptime RPC)", startWindow{}, false},
	} {
		if got := tc.probe.after(first); got != tc.restarted {
			t.Errorf("%s: restarted %v, want %v", tc.name, got, tc.restarted)
		}
	}
}
