package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/netparams"
)

// envFrom turns a map into an os.Environ-style list.
func envFrom(m map[string]string) []string {
	env := make([]string, 0, len(m))
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	return env
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigPrecedenceFlagsOverEnvOverFileOverDefaults(t *testing.T) {
	file := writeFile(t, "c.toml", "chain = \"regtest\"\nrpcport = 1111\nworkers = 3\nrpcconnect = \"10.0.0.1\"\n")
	env := map[string]string{"CFINDEXD_RPCPORT": "2222", "CFINDEXD_WORKERS": "5"}
	cfg, err := loadConfig([]string{"--config=" + file, "--workers=7"}, envFrom(env), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Chain != "regtest" || cfg.RPCConnect != "10.0.0.1" {
		t.Errorf("file values lost: %+v", cfg)
	}
	if cfg.RPCPort != 2222 {
		t.Errorf("env must beat file: rpcport = %d", cfg.RPCPort)
	}
	if cfg.Workers != 7 {
		t.Errorf("flag must beat env: workers = %d", cfg.Workers)
	}
	if cfg.PollInterval != time.Second {
		t.Errorf("default pollinterval lost: %s", cfg.PollInterval)
	}
}

// rpcport = 0 tries the chain's Bitcoin Core port, then btcd's (one
// address where they agree); the cookie is found per chain.
func TestConfigDefaultsPerChain(t *testing.T) {
	for _, tc := range []struct {
		chain  string
		ports  []string
		cookie string
	}{
		{"main", []string{"8332", "8334"}, ".cookie"},
		{"mainnet", []string{"8332", "8334"}, ".cookie"},
		{"testnet", []string{"18332", "18334"}, filepath.Join("testnet3", ".cookie")},
		{"testnet4", []string{"48332", "48334"}, filepath.Join("testnet4", ".cookie")},
		{"signet", []string{"38332"}, filepath.Join("signet", ".cookie")},
		{"regtest", []string{"18443", "18334"}, filepath.Join("regtest", ".cookie")},
		{"simnet", []string{"18556"}, filepath.Join("simnet", ".cookie")},
	} {
		cfg, err := loadConfig([]string{"--chain=" + tc.chain, "--bitcoindatadir=/n"}, envFrom(nil), &bytes.Buffer{})
		if err != nil {
			t.Fatalf("%s: %v", tc.chain, err)
		}
		if cfg.RPCPort != 0 {
			t.Errorf("%s: rpcport %d, want 0 (the chain's defaults)", tc.chain, cfg.RPCPort)
		}
		nw, _ := netparams.Lookup(cfg.Chain)
		var ports []string
		for _, c := range rpcCandidates(cfg, nw) {
			_, port, _ := net.SplitHostPort(c.Addr)
			ports = append(ports, port)
		}
		if !slices.Equal(ports, tc.ports) {
			t.Errorf("%s: tries ports %v, want %v", tc.chain, ports, tc.ports)
		}
		if want := filepath.Join("/n", tc.cookie); cfg.RPCCookieFile != want {
			t.Errorf("%s: cookie %q, want %q", tc.chain, cfg.RPCCookieFile, want)
		}
	}
	cfg, err := loadConfig([]string{"--chain=regtest", "--rpcport=1234", "--rpcconnect=::1", "--rpcuser=u", "--rpcpassword=p"}, envFrom(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	nw, _ := netparams.Lookup("regtest")
	if got := rpcCandidates(cfg, nw); len(got) != 1 || got[0].Addr != "[::1]:1234" {
		t.Errorf("explicit rpcport: candidates %v", got)
	}
}

func TestConfigRejectsBadInputWithOneLine(t *testing.T) {
	unknownKey := writeFile(t, "u.toml", "chain = \"regtest\"\nrpcprot = 1\n")
	badSyntax := writeFile(t, "s.toml", "chain = \n")
	badType := writeFile(t, "t.toml", "workers = \"many\"\n")
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"unknown chain", []string{"--chain=bitcoincash"}, nil, "unknown chain"},
		{"unknown flag", []string{"--rpcprot=1"}, nil, "rpcprot"},
		{"unknown file key", []string{"--config=" + unknownKey}, nil, "unknown key rpcprot"},
		{"file syntax", []string{"--config=" + badSyntax}, nil, "s.toml"},
		{"file type", []string{"--config=" + badType}, nil, "t.toml"},
		{"missing file", []string{"--config=/nonexistent/c.toml"}, nil, "/nonexistent/c.toml"},
		{"bad port", []string{"--rpcport=70000"}, nil, "rpcport"},
		{"port not a number", []string{"--rpcport=abc"}, nil, "not a whole number"},
		{"env not a number", nil, map[string]string{"CFINDEXD_WORKERS": "x"}, "CFINDEXD_WORKERS"},
		{"user without password", []string{"--rpcuser=u"}, nil, "rpcpassword"},
		{"bad prevout source", []string{"--prevoutsource=magic"}, nil, "prevoutsource"},
		{"negative script cache", []string{"--scriptcache=-1"}, nil, "scriptcache"},
		{"huge script cache", []string{"--scriptcache=100000"}, nil, "scriptcache"},
		{"negative rpc threads", []string{"--rpcthreads=-1"}, nil, "rpcthreads"},
		{"tiny memory limit", []string{"--memorylimit=8"}, nil, "memorylimit"},
		{"negative memory limit", []string{"--memorylimit=-1"}, nil, "memorylimit"},
		{"bad zmq", []string{"--zmqpubhashblock=127.0.0.1:28332"}, nil, "tcp://"},
		{"bad duration", []string{"--pollinterval=5"}, nil, "duration"},
		{"too fast poll", []string{"--pollinterval=1ms"}, nil, "pollinterval"},
		{"workers", []string{"--workers=0"}, nil, "workers"},
		{"loglevel", []string{"--loglevel=loud"}, nil, "loglevel"},
		{"positional", []string{"regtest"}, nil, "unexpected argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(tc.args, envFrom(tc.env), &bytes.Buffer{}, &stderr)
			if code == 0 {
				t.Fatalf("exit 0 for bad input")
			}
			msg := stderr.String()
			if strings.Count(msg, "\n") != 1 || !strings.HasSuffix(msg, "\n") {
				t.Errorf("want exactly one line, got %q", msg)
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("message %q does not name %q", msg, tc.want)
			}
		})
	}
}

func TestVersionAndHelpExitZero(t *testing.T) {
	var out bytes.Buffer
	if code := run([]string{"--version"}, envFrom(nil), &out, &bytes.Buffer{}); code != 0 || !strings.Contains(out.String(), version) {
		t.Errorf("--version: code %d, out %q", code, out.String())
	}
	out.Reset()
	if code := run([]string{"--help"}, envFrom(nil), &out, &bytes.Buffer{}); code != 0 {
		t.Errorf("--help: code %d", code)
	}
	for _, k := range configKeys() {
		if !strings.Contains(out.String(), "--"+k.Name) {
			t.Errorf("--help does not list --%s", k.Name)
		}
	}
}

// trackerNumber matches a reference to the issue tracker ("issue 9",
// "#12"), which means nothing to a user.
var trackerNumber = regexp.MustCompile(`(?i)\bissues? *#?\d|#\d`)

// TestHelpSaysOneDefaultPerKey runs the binary's --help: every key's
// description names its default once, and no line cites the tracker.
func TestHelpSaysOneDefaultPerKey(t *testing.T) {
	out, err := exec.Command(daemonBinary, "--help").Output()
	if err != nil {
		t.Fatalf("--help: %v", err)
	}
	lines := strings.Split(string(out), "\n")
	for i, line := range lines {
		if n := strings.Count(line, "(default"); n > 1 {
			t.Errorf("--help line %d gives %d defaults: %q", i+1, n, line)
		}
		if trackerNumber.MatchString(line) {
			t.Errorf("--help line %d cites the tracker: %q", i+1, line)
		}
	}
}

// exampleKeyLine matches a documented key in config.example.toml: the key
// commented out with its default.
var exampleKeyLine = regexp.MustCompile(`(?m)^# ([a-z0-9]+) = (.*)$`)

// TestExampleConfigMatchesConfig fails when config.example.toml and Config
// disagree: every key documented with its true default, every documented key
// real, and the uncommented file decodes to the defaults.
func TestExampleConfigMatchesConfig(t *testing.T) {
	raw, err := os.ReadFile("../../config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	checkDocumentedKeys(t, "config.example.toml", exampleKeyLine.FindAllStringSubmatch(string(raw), -1))

	// Uncommented, the example must be a valid file equal to the defaults.
	active := exampleKeyLine.ReplaceAllStringFunc(string(raw), func(line string) string {
		return strings.TrimPrefix(line, "# ")
	})
	p := writeFile(t, "example.toml", active)
	cfg := defaultConfig()
	if err := cfg.readFile(p); err != nil {
		t.Fatalf("uncommented example does not load: %v", err)
	}
	def := defaultConfig()
	if cfg != def {
		t.Errorf("uncommented example differs from defaults:\n%+v\n%+v", cfg, def)
	}
}

// checkDocumentedKeys fails t unless the (whole match, key, value) triples a
// document's key regexp found list every configuration key once with its
// true default ("value" and value are the same) and nothing that is not a
// key.
func checkDocumentedKeys(t *testing.T, doc string, matches [][]string) {
	t.Helper()
	documented := map[string]string{}
	for _, m := range matches {
		if _, dup := documented[m[1]]; dup {
			t.Errorf("%s: key %s documented twice", doc, m[1])
		}
		documented[m[1]] = m[2]
	}
	def := defaultConfig()
	for _, k := range configKeys() {
		v, ok := documented[k.Name]
		if !ok {
			t.Errorf("%s: key %s is not documented", doc, k.Name)
			continue
		}
		want := def.keyValue(k)
		if got := strings.Trim(v, `"`); got != want {
			t.Errorf("%s: key %s: documented as %s, default is %q", doc, k.Name, v, want)
		}
		delete(documented, k.Name)
	}
	for k := range documented {
		t.Errorf("%s documents %s, which is not a key", doc, k)
	}
}

// nodep2p=auto is the RPC host on the chain's default node P2P port;
// anything else is used as given, empty included.
func TestNodeP2PAddr(t *testing.T) {
	cases := []struct {
		chain, rpcconnect, nodep2p string
		want                       string
		guessed                    bool
	}{
		{"main", "127.0.0.1", "auto", "127.0.0.1:8333", true},
		{"regtest", "::1", "auto", "[::1]:18444", true},
		{"simnet", "node.lan", "auto", "node.lan:18555", true},
		{"testnet4", "127.0.0.1", "auto", "127.0.0.1:48333", true},
		{"main", "127.0.0.1", "10.0.0.2:9999", "10.0.0.2:9999", false},
		{"main", "127.0.0.1", "", "", false},
	}
	for _, c := range cases {
		nw, err := netparams.Lookup(c.chain)
		if err != nil {
			t.Fatal(err)
		}
		got, guessed := nodeP2PAddr(Config{RPCConnect: c.rpcconnect, NodeP2P: c.nodep2p}, nw)
		if got != c.want || guessed != c.guessed {
			t.Errorf("%s %s %q: %q %v, want %q %v", c.chain, c.rpcconnect, c.nodep2p, got, guessed, c.want, c.guessed)
		}
	}
}

// scriptcache is MiB; 0 turns the cache off, which the source reads as a
// negative size.
func TestScriptCacheBytes(t *testing.T) {
	for mib, want := range map[int]int{0: -1, 1: 1 << 20, 64: 64 << 20} {
		if got := scriptCacheBytes(mib); got != want {
			t.Errorf("scriptcache %d: %d bytes, want %d", mib, got, want)
		}
	}
}
