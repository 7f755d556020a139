package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// envPrefix starts every environment variable cfindexd reads.
const envPrefix = "CFINDEXD_"

// errHelp and errVersion tell main that --help or --version was asked for:
// print and exit 0, do not run.
var (
	errHelp    = errors.New("help requested")
	errVersion = errors.New("version requested")
)

// Config is the whole configuration of the daemon. Every field is one key:
// its toml tag is the key in the file, the --flag name and, upper-cased after
// CFINDEXD_, the environment variable. config.example.toml documents each key
// and a test keeps the two in sync. Precedence: flags > env > file > defaults.
type Config struct {
	Chain            string        `toml:"chain" usage:"network: main, test, testnet4, signet, regtest or simnet (btcd)"`
	DataDir          string        `toml:"datadir" usage:"cfindexd's own data directory; the store lives in <datadir>/<chain>/"`
	RPCConnect       string        `toml:"rpcconnect" usage:"host of the node's JSON-RPC server"`
	RPCPort          int           `toml:"rpcport" usage:"port of the node's JSON-RPC server (0 = the chain's default)"`
	RPCUser          string        `toml:"rpcuser" usage:"JSON-RPC user; empty = cookie authentication"`
	RPCPassword      string        `toml:"rpcpassword" usage:"JSON-RPC password"`
	RPCCookieFile    string        `toml:"rpccookiefile" usage:"path of the node's .cookie (default <bitcoindatadir>/<chain subdir>/.cookie)"`
	BitcoinDataDir   string        `toml:"bitcoindatadir" usage:"the node's datadir, used to find its .cookie"`
	RESTURL          string        `toml:"resturl" usage:"base URL of Core's REST interface (-rest=1); empty = http://<rpcconnect>:<rpcport>"`
	PrevoutSource    string        `toml:"prevoutsource" usage:"where spent scripts come from: auto, rest, getblock or txindex"`
	NodeP2P          string        `toml:"nodep2p" usage:"node's P2P host:port to fetch raw blocks from in txindex mode (btcd); auto = rpcconnect on the chain's node P2P port; empty = JSON-RPC only"`
	ZMQPubHashBlock  string        `toml:"zmqpubhashblock" usage:"node's zmqpubhashblock endpoint, e.g. tcp://127.0.0.1:28332; empty = poll only"`
	PollInterval     time.Duration `toml:"pollinterval" usage:"how often to ask the node for its tip when no notification arrives"`
	Workers          int           `toml:"workers" usage:"blocks fetched and filtered in parallel during catch-up"`
	ScriptCache      int           `toml:"scriptcache" usage:"MiB of recent output scripts kept to resolve spends in txindex mode (btcd) without asking the node; 0 disables"`
	BatchBlocks      int           `toml:"batchblocks" usage:"most blocks committed in one store transaction"`
	Listen           string        `toml:"listen" usage:"P2P address for light clients; auto = every interface on the chain's cfindexd port; empty disables"`
	MaxPeers         int           `toml:"maxpeers" usage:"most P2P peers at once"`
	MaxPeersPerIP    int           `toml:"maxpeersperip" usage:"most P2P peers from one IPv4 address or IPv6 /64"`
	RelayTx          bool          `toml:"relaytx" usage:"pass transactions from light clients to the node (sendrawtransaction)"`
	HTTPListen       string        `toml:"httplisten" usage:"HTTP API, metrics and health address; auto = 127.0.0.1:<chain's HTTP port>; empty disables"`
	ReadyBlocks      int           `toml:"readyblocks" usage:"/readyz is 200 while the indexed tip is at most this many blocks behind the node"`
	ReorgSafetyDepth int           `toml:"reorgsafetydepth" usage:"bulk ranges at least this deep are final: strong ETag, immutable caching"`
	LogLevel         string        `toml:"loglevel" usage:"trace, debug, info, warn or error"`
	LogFormat        string        `toml:"logformat" usage:"auto (console on a terminal, JSON otherwise), console or json"`

	// Load on the node and memory (perf-bench, issue 12).
	RPCThreads  int `toml:"rpcthreads" usage:"the node's -rpcthreads: getblock-3 mode keeps one fewer requests in flight; 0 = Core's default for its version (4, or 16 since v29)"`
	MemoryLimit int `toml:"memorylimit" usage:"MiB the Go runtime aims to stay under (soft limit: the GC works harder near it); 0 = derived from scriptcache and workers; the GOMEMLIMIT environment variable overrides it"`
}

// defaultConfig returns the configuration used for every key that no file,
// environment variable or flag sets.
func defaultConfig() Config {
	home, err := os.UserHomeDir()
	if err != nil {
		home = "."
	}
	return Config{
		Chain:            "main",
		DataDir:          filepath.Join(home, ".cfindexd"),
		RPCConnect:       "127.0.0.1",
		BitcoinDataDir:   filepath.Join(home, ".bitcoin"),
		PrevoutSource:    "auto",
		PollInterval:     time.Second,
		Workers:          8,
		ScriptCache:      64,
		BatchBlocks:      500,
		NodeP2P:          "auto",
		Listen:           "auto",
		MaxPeers:         125,
		MaxPeersPerIP:    8,
		HTTPListen:       "auto",
		ReadyBlocks:      2,
		ReorgSafetyDepth: 144,
		LogLevel:         "info",
		LogFormat:        "auto",
	}
}

// configKey describes one configuration key found by reflection on Config.
type configKey struct {
	Name  string
	Usage string
	Index int
}

// configKeys lists the keys of Config in declaration order.
func configKeys() []configKey {
	t := reflect.TypeFor[Config]()
	keys := make([]configKey, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		keys = append(keys, configKey{Name: f.Tag.Get("toml"), Usage: f.Tag.Get("usage"), Index: i})
	}
	return keys
}

// setKey parses raw into the field behind key.
func (c *Config) setKey(key configKey, raw string) error {
	v := reflect.ValueOf(c).Elem().Field(key.Index)
	switch v.Interface().(type) {
	case string:
		v.SetString(raw)
	case int:
		n, err := strconv.Atoi(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf("%s: %q is not a whole number", key.Name, raw)
		}
		v.SetInt(int64(n))
	case bool:
		b, err := strconv.ParseBool(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf("%s: %q is not true or false", key.Name, raw)
		}
		v.SetBool(b)
	case time.Duration:
		d, err := time.ParseDuration(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf("%s: %q is not a duration like 2s or 500ms", key.Name, raw)
		}
		v.SetInt(int64(d))
	default:
		return fmt.Errorf("%s: unsupported type %s", key.Name, v.Type())
	}
	return nil
}

// keyValue renders the current value of key for --help and docs.
func (c *Config) keyValue(key configKey) string {
	v := reflect.ValueOf(c).Elem().Field(key.Index).Interface()
	if d, ok := v.(time.Duration); ok {
		return d.String()
	}
	return fmt.Sprint(v)
}

// loadConfig builds the configuration from defaults, the TOML file (from
// --config or CFINDEXD_CONFIG), CFINDEXD_* variables and flags, in rising
// precedence, then validates it. getenv is os.Getenv in production.
func loadConfig(args []string, getenv func(string) string, stdout io.Writer) (Config, error) {
	cfg := defaultConfig()
	keys := configKeys()

	fs := flag.NewFlagSet("cfindexd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	flagValues := map[string]string{}
	var flagOrder []string
	for _, k := range keys {
		fs.Func(k.Name, k.Usage, func(s string) error {
			if _, seen := flagValues[k.Name]; !seen {
				flagOrder = append(flagOrder, k.Name)
			}
			flagValues[k.Name] = s
			return nil
		})
	}
	configPath := fs.String("config", "", "TOML configuration file (also CFINDEXD_CONFIG)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	showHelp := fs.Bool("help", false, "print this help and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(stdout, keys)
			return cfg, errHelp
		}
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q (options are --key=value)", fs.Arg(0))
	}
	if *showHelp {
		printUsage(stdout, keys)
		return cfg, errHelp
	}
	if *showVersion {
		return cfg, errVersion
	}

	path := *configPath
	if path == "" {
		path = getenv(envPrefix + "CONFIG")
	}
	if path != "" {
		if err := cfg.readFile(path); err != nil {
			return cfg, err
		}
	}
	for _, k := range keys {
		if raw, ok := lookupEnv(getenv, envPrefix+strings.ToUpper(k.Name)); ok {
			if err := cfg.setKey(k, raw); err != nil {
				return cfg, fmt.Errorf("environment %s%s: %w", envPrefix, strings.ToUpper(k.Name), err)
			}
		}
	}
	byName := map[string]configKey{}
	for _, k := range keys {
		byName[k.Name] = k
	}
	for _, name := range flagOrder {
		if err := cfg.setKey(byName[name], flagValues[name]); err != nil {
			return cfg, fmt.Errorf("flag --%w", err)
		}
	}
	return cfg, cfg.validate()
}

// lookupEnv treats an empty variable as unset, as shells make it easy to
// export one by accident.
func lookupEnv(getenv func(string) string, name string) (string, bool) {
	v := getenv(name)
	return v, v != ""
}

// readFile decodes a TOML file over c; an unknown key is an error so a typo
// never silently falls back to a default.
func (c *Config) readFile(path string) error {
	md, err := toml.DecodeFile(path, c)
	if err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		names := make([]string, len(undecoded))
		for i, k := range undecoded {
			names[i] = k.String()
		}
		sort.Strings(names)
		return fmt.Errorf("config file %s: unknown key %s", path, strings.Join(names, ", "))
	}
	return nil
}

// validate checks every value once at start so that a bad value fails with
// one line instead of surfacing later.
func (c *Config) validate() error {
	nw, err := lookupNetwork(c.Chain)
	if err != nil {
		return err
	}
	c.Chain = nw.Name
	if c.DataDir == "" {
		return errors.New("datadir: must not be empty")
	}
	if c.RPCConnect == "" {
		return errors.New("rpcconnect: must not be empty")
	}
	if c.RPCPort == 0 {
		c.RPCPort = nw.RPCPort
	}
	if c.RPCPort < 1 || c.RPCPort > 65535 {
		return fmt.Errorf("rpcport: %d is not a TCP port", c.RPCPort)
	}
	if (c.RPCUser == "") != (c.RPCPassword == "") {
		return errors.New("rpcuser and rpcpassword: set both, or neither to use the cookie file")
	}
	if c.RPCUser == "" && c.RPCCookieFile == "" {
		c.RPCCookieFile = filepath.Join(c.BitcoinDataDir, nw.CookieSubdir, ".cookie")
	}
	switch c.PrevoutSource {
	case "auto", "rest", "getblock", "txindex":
	default:
		return fmt.Errorf("prevoutsource: %q is not auto, rest, getblock or txindex", c.PrevoutSource)
	}
	if c.NodeP2P != "" && c.NodeP2P != "auto" {
		if _, port, err := net.SplitHostPort(c.NodeP2P); err != nil || port == "" {
			return fmt.Errorf("nodep2p: %q is not host:port", c.NodeP2P)
		}
	}
	if c.ZMQPubHashBlock != "" {
		if err := validateZMQEndpoint(c.ZMQPubHashBlock); err != nil {
			return fmt.Errorf("zmqpubhashblock: %w", err)
		}
	}
	if c.PollInterval < 100*time.Millisecond || c.PollInterval > time.Hour {
		return fmt.Errorf("pollinterval: %s is outside 100ms..1h", c.PollInterval)
	}
	if c.Workers < 1 || c.Workers > 64 {
		return fmt.Errorf("workers: %d is outside 1..64", c.Workers)
	}
	if c.ScriptCache < 0 || c.ScriptCache > 65536 {
		return fmt.Errorf("scriptcache: %d MiB is outside 0..65536", c.ScriptCache)
	}
	if c.BatchBlocks < 1 || c.BatchBlocks > 10000 {
		return fmt.Errorf("batchblocks: %d is outside 1..10000", c.BatchBlocks)
	}
	if c.RPCThreads < 0 || c.RPCThreads > 1024 {
		return fmt.Errorf("rpcthreads: %d is outside 0..1024", c.RPCThreads)
	}
	if c.MemoryLimit < 0 || c.MemoryLimit > 1<<20 {
		return fmt.Errorf("memorylimit: %d MiB is outside 0..1048576", c.MemoryLimit)
	}
	if c.MemoryLimit > 0 && c.MemoryLimit < 32 {
		return fmt.Errorf("memorylimit: %d MiB is too little to run in (at least 32, or 0 to derive it)", c.MemoryLimit)
	}
	if c.Listen == "auto" {
		c.Listen = net.JoinHostPort("", strconv.Itoa(nw.P2PPort))
	}
	if c.Listen != "" {
		if err := validateListenAddr(c.Listen); err != nil {
			return fmt.Errorf("listen: %w", err)
		}
	}
	if c.MaxPeers < 1 || c.MaxPeers > 10000 {
		return fmt.Errorf("maxpeers: %d is outside 1..10000", c.MaxPeers)
	}
	if c.MaxPeersPerIP < 1 || c.MaxPeersPerIP > c.MaxPeers {
		return fmt.Errorf("maxpeersperip: %d is outside 1..maxpeers (%d)", c.MaxPeersPerIP, c.MaxPeers)
	}
	if c.HTTPListen == "auto" {
		c.HTTPListen = net.JoinHostPort("127.0.0.1", strconv.Itoa(nw.HTTPPort))
	}
	if c.HTTPListen != "" {
		if err := validateListenAddr(c.HTTPListen); err != nil {
			return fmt.Errorf("httplisten: %w", err)
		}
	}
	if c.ReadyBlocks < 1 || c.ReadyBlocks > 1000 {
		return fmt.Errorf("readyblocks: %d is outside 1..1000", c.ReadyBlocks)
	}
	if c.ReorgSafetyDepth < 6 || c.ReorgSafetyDepth > 100000 {
		return fmt.Errorf("reorgsafetydepth: %d is outside 6..100000", c.ReorgSafetyDepth)
	}
	switch c.LogLevel {
	case "trace", "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("loglevel: %q is not trace, debug, info, warn or error", c.LogLevel)
	}
	switch c.LogFormat {
	case "auto", "console", "json":
	default:
		return fmt.Errorf("logformat: %q is not auto, console or json", c.LogFormat)
	}
	return nil
}

// validateZMQEndpoint accepts the tcp://host:port form Core prints in
// getzmqnotifications.
func validateZMQEndpoint(ep string) error {
	rest, ok := strings.CutPrefix(ep, "tcp://")
	if !ok {
		return fmt.Errorf("%q must look like tcp://host:port", ep)
	}
	if _, port, err := net.SplitHostPort(rest); err != nil || port == "" {
		return fmt.Errorf("%q must look like tcp://host:port", ep)
	}
	return nil
}

// validateListenAddr accepts host:port with a numeric port (host may be
// empty for every interface).
func validateListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q must look like host:port", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q: port must be 1..65535", addr)
	}
	return nil
}

// printUsage writes --help: every key with its default.
func printUsage(w io.Writer, keys []configKey) {
	def := defaultConfig()
	fmt.Fprintf(w, "cfindexd %s — BIP-157/158 compact block filter server\n\n", version)
	fmt.Fprintf(w, "Usage: cfindexd [--config=FILE] [--key=value ...]\n\n")
	fmt.Fprintf(w, "Every key can also be set in the TOML file or as %s<KEY>.\n", envPrefix)
	fmt.Fprintf(w, "Precedence: flags > environment > file > defaults.\n\n")
	fmt.Fprintf(w, "  --config=FILE  TOML configuration file (also %sCONFIG)\n", envPrefix)
	fmt.Fprintf(w, "  --version      print the version and exit\n")
	fmt.Fprintf(w, "  --help         print this help and exit\n\n")
	for _, k := range keys {
		fmt.Fprintf(w, "  --%s\n      %s (default %q)\n", k.Name, k.Usage, def.keyValue(k))
	}
}
