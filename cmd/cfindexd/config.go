package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/cfindexd/cfindexd/cmd/cfindexd/internal/publishwire"
	"github.com/cfindexd/cfindexd/httpapi"
	"github.com/cfindexd/cfindexd/mempool"
	"github.com/cfindexd/cfindexd/p2p"
	"github.com/cfindexd/cfindexd/p2p/bip37"
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
	Chain           string        `toml:"chain" usage:"network: main, test, testnet4, signet, regtest or simnet (btcd)"`
	DataDir         string        `toml:"datadir" path:"true" usage:"cfindexd's own data directory; the store lives in <datadir>/<chain>/"`
	RPCConnect      string        `toml:"rpcconnect" usage:"host of the node's JSON-RPC server"`
	RPCPort         int           `toml:"rpcport" usage:"port of the node's JSON-RPC server (0 = the chain's Bitcoin Core port, then btcd's)"`
	RPCUser         string        `toml:"rpcuser" usage:"JSON-RPC user; empty = cookie authentication"`
	RPCPassword     string        `toml:"rpcpassword" usage:"JSON-RPC password"`
	RPCCookieFile   string        `toml:"rpccookiefile" path:"true" usage:"path of the node's .cookie; empty = <bitcoindatadir>/<chain subdir>/.cookie"`
	BitcoinDataDir  string        `toml:"bitcoindatadir" path:"true" usage:"the node's datadir, used to find its .cookie"`
	RESTURL         string        `toml:"resturl" usage:"base URL of Core's REST interface (-rest=1); empty = http://<rpcconnect>:<rpcport>"`
	PrevoutSource   string        `toml:"prevoutsource" usage:"where spent scripts come from: auto, blocksdir, rest, getblock or txindex"`
	NodeP2P         string        `toml:"nodep2p" usage:"node's P2P host:port to fetch raw blocks from in txindex mode (btcd); auto = rpcconnect on the chain's node P2P port; empty = JSON-RPC only"`
	ZMQPubHashBlock string        `toml:"zmqpubhashblock" usage:"node's zmqpubhashblock endpoint, e.g. tcp://127.0.0.1:28332; empty = poll only"`
	PollInterval    time.Duration `toml:"pollinterval" usage:"how often to ask the node for its tip when no notification arrives"`
	Workers         int           `toml:"workers" usage:"blocks fetched and filtered in parallel during catch-up"`
	ScriptCache     int           `toml:"scriptcache" usage:"MiB of recent output scripts kept to resolve spends in txindex mode (btcd) without asking the node; 0 disables"`
	BatchBlocks     int           `toml:"batchblocks" usage:"most blocks committed in one store transaction"`
	Listen          string        `toml:"listen" usage:"P2P address for light clients; auto = every interface on the chain's cfindexd port; empty disables"`
	MaxPeers        int           `toml:"maxpeers" usage:"most P2P peers at once"`
	MaxPeersPerIP   int           `toml:"maxpeersperip" usage:"P2P peers one IPv4 address or IPv6 /64 keeps shielded once maxpeers is reached; its others are evicted first (no newcomer is refused while slots are free)"`
	RelayTx         bool          `toml:"relaytx" usage:"pass transactions from light clients to the node (sendrawtransaction)"`
	V2Transport     bool          `toml:"v2transport" usage:"accept BIP-324 encrypted (v2) connections from light clients besides v1, on the same port, and advertise NODE_P2P_V2"`
	// P2P defences against hostile peers (p2pconfig.go turns them into
	// p2p.Config).
	MaxPeersPerSubnet int           `toml:"maxpeerspersubnet" usage:"P2P peers one IPv4 /16 or IPv6 /32 keeps shielded once maxpeers is reached; its others are evicted first (no newcomer is refused while slots are free)"`
	Whitelist         string        `toml:"whitelist" usage:"comma-separated addresses and networks (e.g. 127.0.0.1, 10.0.0.0/8) whose P2P peers are exempt from eviction, discouragement and the upload target: a reverse proxy, Tor"`
	SendBudget        int           `toml:"sendbudget" usage:"MiB of P2P answers queued for all peers together"`
	PeerSendBudget    int           `toml:"peersendbudget" usage:"KiB of P2P answers queued for one peer"`
	RecvBudget        int           `toml:"recvbudget" usage:"MiB of large P2P messages (over 16 KiB) buffered for all peers together; more are discarded"`
	PeerStallTimeout  time.Duration `toml:"peerstalltimeout" usage:"disconnect a P2P peer whose answers stay queued this long without one being written"`
	MaxBlockFetches   int           `toml:"maxblockfetches" usage:"most blocks fetched from the node for P2P peers at once (1 while indexing catches up), over a connection of their own"`
	MaxUploadTarget   int           `toml:"maxuploadtarget" usage:"MiB of blocks served to P2P peers per 24 h before blocks over a week old are refused; 0 = no limit"`
	TxRelayRate       int           `toml:"txrelayrate" usage:"transactions per second relayed to the node from all P2P peers together (relaytx)"`

	HTTPListen       string `toml:"httplisten" usage:"HTTP API, metrics and health address; auto = 127.0.0.1:<chain's HTTP port>; empty disables"`
	ReadyBlocks      int    `toml:"readyblocks" usage:"/readyz is 200 while the indexed tip is at most this many blocks behind the node"`
	ReorgSafetyDepth int    `toml:"reorgsafetydepth" usage:"bulk ranges at least this deep are final (strong ETag, immutable caching); a deeper reorg stops cfindexd unless allowdeepreorg"`
	// HTTP connection and bulk-download limits.
	HTTPMaxConns      int `toml:"httpmaxconns" usage:"most open HTTP connections; at the cap one of the network holding the most is closed to admit a new one (idle first), else the new one gets 503"`
	HTTPMaxConnsPerIP int `toml:"httpmaxconnsperip" usage:"most open HTTP connections from one IPv4 address or IPv6 /64"`
	HTTPBulkPerIP     int `toml:"httpbulkperip" usage:"most bulk downloads at once from one IPv4 address or IPv6 /64 (of 8 in all)"`
	HTTPBulkMinRate   int `toml:"httpbulkminrate" usage:"KiB/s every HTTP response (bulk downloads included) must reach in every 10 s window, or it is cut off with its connection"`

	LogLevel  string `toml:"loglevel" usage:"trace, debug, info, warn or error"`
	LogFormat string `toml:"logformat" usage:"auto (console on a terminal, JSON otherwise), console or json"`

	// Reorg safety and readiness (reorgready.go).
	AllowDeepReorg bool          `toml:"allowdeepreorg" usage:"follow reorgs deeper than reorgsafetydepth, and a node whose chain shares only the genesis block with the index, instead of stopping"`
	ReorgSettle    time.Duration `toml:"reorgsettle" usage:"how long the node must stay on a chain with no more work than the indexed one before cfindexd follows it; 0 = at once"`
	ScrubInterval  time.Duration `toml:"scrubinterval" usage:"the background store scrub checks 64 heights' filters, filter hashes and filter headers every scrubinterval, genesis to tip and over again, and repairs what is damaged from the node; 0 = off"`
	ReadyMaxTipAge string        `toml:"readymaxtipage" usage:"/readyz is 503 while the indexed tip's block is older than this; auto = 2h on main, test, testnet4 and signet, off on regtest and simnet; 0 = off"`

	// The silent-payment index (docs/silent-payments.md).
	SilentPayments bool `toml:"silentpayments" usage:"build the BIP-352 silent-payment tweak index (tweaks, taproot filters, their commitment chain) beside the filters from the chain's taproot activation; turned on for an existing store it is built in the background while serving"`

	// The blocks-directory prevout source.
	BlocksDir string `toml:"blocksdir" path:"true" usage:"Bitcoin Core's blocks directory (holding blk00000.dat) for prevoutsource blocksdir, read-only; empty = <bitcoindatadir>/<chain subdir>/blocks"`

	// btcd's TLS.
	RPCCert string `toml:"rpccert" path:"true" usage:"path of btcd's rpc.cert: the node's RPC is then HTTPS, trusting this certificate; empty = plain HTTP"`

	// The read replica (replica.go): no node, a published layout and a
	// primary cfindexd instead.
	ReplicaSource  string `toml:"replicasource" usage:"read replica: base URL of a published layout (a bucket's or CDN's public URL, or another cfindexd's HTTP, e.g. http://primary:8384) to bootstrap the store from, checked before anything is served; with replicasource or replicaprimary cfindexd runs with no node"`
	ReplicaPrimary string `toml:"replicaprimary" usage:"read replica: P2P host:port of the primary cfindexd to follow the tip from, as a BIP-157 light client; empty = poll replicasource's latest instead"`

	// BIP-37 Bloom-filter serving (bloomconfig.go).
	PeerBloomFilters bool    `toml:"peerbloomfilters" usage:"serve BIP-37 Bloom-filter wallets over P2P (NODE_BLOOM: filterload, filtered blocks, mempool); off as in Bitcoin Core"`
	BloomMaxFPR      float64 `toml:"bloommaxfpr" usage:"refuse a Bloom filter whose estimated false-positive rate is above this (it matches nearly everything); 1 accepts every filter"`
	BloomMinFPR      float64 `toml:"bloomminfpr" usage:"refuse a Bloom filter whose estimated false-positive rate is below this (a privacy floor; 0.01 locks out bitcoinj-based wallets); 0 = off"`
	BloomCPU         int     `toml:"bloomcpu" usage:"percent of the machine's CPU time BIP-37 work (matching filters, decoding blocks) may take on average"`
	MempoolMirror    int     `toml:"mempoolmirror" usage:"MiB of the node's mempool mirrored to answer BIP-37 mempool requests and announce matching transactions (peerbloomfilters); 0 = none"`
	ZMQPubRawTx      string  `toml:"zmqpubrawtx" usage:"node's zmqpubrawtx endpoint, e.g. tcp://127.0.0.1:28333: mempool transactions arrive with their bytes (needs zmqpubsequence)"`
	ZMQPubSequence   string  `toml:"zmqpubsequence" usage:"node's zmqpubsequence endpoint: the mempool mirror follows the node's mempool by notification instead of polling getrawmempool every second"`

	// Publishing final ranges to an S3-compatible bucket (publishwire).
	S3Endpoint  string `toml:"s3endpoint" usage:"host[:port] of the S3 API to publish final ranges to (s3.amazonaws.com, <account>.r2.cloudflarestorage.com, 127.0.0.1:9000); needs s3bucket"`
	S3Bucket    string `toml:"s3bucket" usage:"bucket to publish every final range, the neutrino import files, manifest.json and latest to; empty = no publishing"`
	S3Region    string `toml:"s3region" usage:"the bucket's region; empty = AWS_REGION, else asked of the server"`
	S3Prefix    string `toml:"s3prefix" usage:"object names start with <s3prefix>/ (no leading or trailing slash); empty = at the bucket's root"`
	S3Insecure  bool   `toml:"s3insecure" usage:"speak plain HTTP to s3endpoint (MinIO on loopback) instead of HTTPS"`
	S3AccessKey string `toml:"s3accesskey" usage:"access key of the bucket; empty = the AWS environment (AWS_ACCESS_KEY_ID, ~/.aws/credentials, the instance role)"`
	S3SecretKey string `toml:"s3secretkey" usage:"secret key of the bucket, with s3accesskey"`

	// Load on the node and memory.
	RPCThreads  int `toml:"rpcthreads" usage:"the node's -rpcthreads: getblock-3 mode keeps one fewer requests in flight; 0 = Core's default for its version (4, or 16 since v29)"`
	MemoryLimit int `toml:"memorylimit" usage:"MiB the Go runtime aims to stay under (soft limit: the GC works harder near it); 0 = the sum of the budgets (indexer, P2P, HTTP, mempool mirror, 32 MiB base), at most 3/4 of a cgroup's memory.max; the GOMEMLIMIT environment variable overrides it"`
}

// defaultConfig returns the configuration used for every key that no file,
// environment variable or flag sets.
func defaultConfig() Config {
	return Config{
		Chain:          "main",
		DataDir:        "~/.cfindexd",
		RPCConnect:     "127.0.0.1",
		BitcoinDataDir: "~/.bitcoin",
		PrevoutSource:  "auto",
		PollInterval:   time.Second,
		Workers:        8,
		ScriptCache:    64,
		BatchBlocks:    500,
		NodeP2P:        "auto",
		Listen:         "auto",
		MaxPeers:       p2p.DefaultMaxPeers,
		MaxPeersPerIP:  p2p.DefaultMaxPeersPerIP,
		V2Transport:    true,

		MaxPeersPerSubnet: p2p.DefaultMaxPeersPerSubnet,
		SendBudget:        p2p.DefaultSendBudget >> 20,
		PeerSendBudget:    p2p.DefaultPeerSendBudget >> 10,
		RecvBudget:        p2p.DefaultRecvBudget >> 20,
		PeerStallTimeout:  p2p.DefaultSendStallTimeout,
		MaxBlockFetches:   p2p.DefaultMaxBlockFetches,
		MaxUploadTarget:   p2p.DefaultMaxUploadTarget >> 20,
		TxRelayRate:       p2p.DefaultTxRelayRate,

		HTTPListen:        "auto",
		ReadyBlocks:       2,
		ReorgSafetyDepth:  144,
		ReorgSettle:       10 * time.Second,
		ScrubInterval:     time.Second,
		ReadyMaxTipAge:    "auto",
		HTTPMaxConns:      httpapi.DefaultMaxConns,
		HTTPMaxConnsPerIP: httpapi.DefaultMaxConnsPerAddr,
		HTTPBulkPerIP:     httpapi.DefaultMaxBulkPerAddr,
		HTTPBulkMinRate:   httpapi.DefaultBulkMinRate >> 10,
		LogLevel:          "info",
		LogFormat:         "auto",

		BloomMaxFPR:   bip37.DefaultMaxFPR,
		BloomCPU:      int(bip37.DefaultCPUShare * 100),
		MempoolMirror: mempool.DefaultMaxBytes >> 20,
	}
}

// configKey describes one configuration key found by reflection on Config.
type configKey struct {
	Name  string
	Usage string
	Index int
	// Path: the key holds a path (tag path:"true"); ~ and $HOME expand.
	Path bool
}

// configKeys lists the keys of Config in declaration order.
func configKeys() []configKey {
	t := reflect.TypeFor[Config]()
	keys := make([]configKey, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		keys = append(keys, configKey{Name: f.Tag.Get("toml"), Usage: f.Tag.Get("usage"), Index: i, Path: f.Tag.Get(pathTag) == "true"})
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
	case float64:
		f, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if err != nil {
			return fmt.Errorf("%s: %q is not a number like 0.1", key.Name, raw)
		}
		v.SetFloat(f)
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

// defaultConfigName is the configuration file looked for in the datadir
// when neither --config nor CFINDEXD_CONFIG names one.
const defaultConfigName = "cfindexd.toml"

// loadConfig builds the configuration from defaults, the TOML file,
// CFINDEXD_* variables and flags, in rising precedence, then validates it.
// environ is the environment as os.Environ returns it.
func loadConfig(args, environ []string, stdout io.Writer) (Config, error) {
	cfg, _, err := loadConfigFrom(args, environ, stdout)
	return cfg, err
}

// loadConfigFrom is loadConfig that also returns the configuration file it
// read ("" for none). The file is --config (or its alias --conf), else
// CFINDEXD_CONFIG, else <datadir>/cfindexd.toml when it exists, with the
// datadir that flags, environment or the default name. Under systemd with
// StateDirectory=, $STATE_DIRECTORY replaces the default datadir. Unknown
// CFINDEXD_* variables are refused like unknown keys.
func loadConfigFrom(args, environ []string, stdout io.Writer) (Config, string, error) {
	cfg := defaultConfig()
	keys := configKeys()
	env := environMap(environ)
	getenv := func(name string) string { return env[name] }
	if err := checkEnvNames(env, keys); err != nil {
		return cfg, "", err
	}

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
	var configPath string
	fs.StringVar(&configPath, "config", "", "TOML configuration file (also CFINDEXD_CONFIG)")
	fs.StringVar(&configPath, "conf", "", "alias of --config")
	showVersion := fs.Bool("version", false, "print the version and exit")
	showHelp := fs.Bool("help", false, "print this help and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(stdout, keys)
			return cfg, "", errHelp
		}
		return cfg, "", err
	}
	if fs.NArg() > 0 {
		return cfg, "", fmt.Errorf("unexpected argument %q (options are --key=value)", fs.Arg(0))
	}
	if *showHelp {
		printUsage(stdout, keys)
		return cfg, "", errHelp
	}
	if *showVersion {
		return cfg, "", errVersion
	}

	home := homeDir(getenv)
	if dir := getenv("STATE_DIRECTORY"); dir != "" {
		// systemd's StateDirectory=: the first directory it lists.
		cfg.DataDir, _, _ = strings.Cut(dir, ":")
	}
	path := configPath
	if path == "" {
		path = getenv(envPrefix + "CONFIG")
	}
	if path == "" {
		dataDir := cfg.DataDir
		if v, ok := lookupEnv(getenv, envPrefix+"DATADIR"); ok {
			dataDir = v
		}
		if v, ok := flagValues["datadir"]; ok {
			dataDir = v
		}
		dataDir, err := expandPath(dataDir, home)
		if err != nil {
			return cfg, "", fmt.Errorf("datadir: %w", err)
		}
		candidate := filepath.Join(dataDir, defaultConfigName)
		exists, err := fileExists(candidate)
		if err != nil {
			return cfg, "", fmt.Errorf("config file %s: %w", candidate, err)
		}
		if exists {
			path = candidate
		}
	}
	if path != "" {
		var err error
		if path, err = expandPath(path, home); err != nil {
			return cfg, "", fmt.Errorf("config: %w", err)
		}
		if err := cfg.readFile(path); err != nil {
			return cfg, "", err
		}
	}
	for _, k := range keys {
		if raw, ok := lookupEnv(getenv, envPrefix+strings.ToUpper(k.Name)); ok {
			if err := cfg.setKey(k, raw); err != nil {
				return cfg, "", fmt.Errorf("environment %s%s: %w", envPrefix, strings.ToUpper(k.Name), err)
			}
		}
	}
	byName := map[string]configKey{}
	for _, k := range keys {
		byName[k.Name] = k
	}
	for _, name := range flagOrder {
		if err := cfg.setKey(byName[name], flagValues[name]); err != nil {
			return cfg, "", fmt.Errorf("flag --%w", err)
		}
	}
	if err := cfg.expandPaths(home); err != nil {
		return cfg, "", err
	}
	return cfg, path, cfg.validate()
}

// environMap turns os.Environ's KEY=value list into a map; later entries
// win, as with getenv.
func environMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// testEnvPrefix starts variables that cfindexd's own tests use
// (CFINDEXD_TEST_LOG, say); the daemon ignores them so that a developer's
// test settings do not stop the daemons those tests start.
const testEnvPrefix = envPrefix + "TEST_"

// checkEnvNames refuses a CFINDEXD_* variable that is neither a key, nor
// CFINDEXD_CONFIG, nor reserved for tests: a misspelt variable would
// otherwise be ignored silently, as an unknown key in the file would.
func checkEnvNames(env map[string]string, keys []configKey) error {
	known := map[string]bool{envPrefix + "CONFIG": true}
	for _, k := range keys {
		known[envPrefix+strings.ToUpper(k.Name)] = true
	}
	var unknown []string
	for name := range env {
		if strings.HasPrefix(name, envPrefix) && !known[name] && !strings.HasPrefix(name, testEnvPrefix) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return fmt.Errorf("environment %s: unknown variable (each key is %s<KEY>, e.g. %sRPCPORT; see --help)", strings.Join(unknown, ", "), envPrefix, envPrefix)
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

// printUsage writes --help: every key with its default.
func printUsage(w io.Writer, keys []configKey) {
	def := defaultConfig()
	fmt.Fprintf(w, "cfindexd %s — BIP-157/158 compact block filter server\n\n", version)
	fmt.Fprintf(w, "Usage: cfindexd [--conf=FILE] [--key=value ...]\n")
	fmt.Fprintf(w, "       cfindexd status [--json] [--conf=FILE] [--key=value ...]\n\n")
	fmt.Fprintf(w, "Every key can also be set in the TOML file or as %s<KEY>.\n", envPrefix)
	fmt.Fprintf(w, "Precedence: flags > environment > file > defaults. ~ and $HOME expand in paths.\n\n")
	fmt.Fprintf(w, "  --conf=FILE    TOML configuration file (also --config, %sCONFIG);\n", envPrefix)
	fmt.Fprintf(w, "                 default <datadir>/%s when it exists\n", defaultConfigName)
	fmt.Fprintf(w, "  --version      print the version, commit and Go version and exit\n")
	fmt.Fprintf(w, "  --reindex      move the store aside and rebuild it from the node (see README)\n")
	fmt.Fprintf(w, "  --help         print this help and exit\n\n")
	fmt.Fprintf(w, "  status         ask the running cfindexd (at httplisten) how it is doing;\n")
	fmt.Fprintf(w, "                 --json prints its /status document\n\n")
	for _, k := range keys {
		fmt.Fprintf(w, "  --%s\n      %s (default %q)\n", k.Name, k.Usage, def.keyValue(k))
	}
}

// configDone answers what loading the configuration returned for the
// command prog ("cfindexd", "cfindexd status", ...): --help (already
// printed) and --version end it with 0, a bad configuration with one line
// on stderr and 2. done is false when the command goes on.
func configDone(prog string, err error, stdout, stderr io.Writer) (code int, done bool) {
	switch {
	case errors.Is(err, errHelp):
		return 0, true
	case errors.Is(err, errVersion):
		fmt.Fprintln(stdout, readBuildVersion())
		return 0, true
	case err != nil:
		fmt.Fprintf(stderr, "%s: config: %v\n", prog, err)
		return 2, true
	}
	return 0, false
}

// s3Keys are the publisher's keys.
func (c *Config) s3Keys() publishwire.Keys {
	return publishwire.Keys{Endpoint: c.S3Endpoint, Bucket: c.S3Bucket, Region: c.S3Region, Prefix: c.S3Prefix,
		Insecure: c.S3Insecure, AccessKey: c.S3AccessKey, SecretKey: c.S3SecretKey}
}
