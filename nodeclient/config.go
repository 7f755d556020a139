package nodeclient

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"
)

// DefaultTimeout bounds one HTTP exchange with the node when Config.Timeout
// is zero. Large blocks over getblock verbosity 3 on a slow disk can take
// several seconds, so this is generous.
const DefaultTimeout = 60 * time.Second

// Config says how to reach the node's JSON-RPC (and REST) server.
type Config struct {
	// Host is host:port of the RPC server, e.g. "127.0.0.1:8332".
	Host string
	// User and Password are rpcuser/rpcpassword. Leave both empty to use
	// CookieFile.
	User, Password string
	// CookieFile is the node's .cookie file (see DefaultCookiePath). It is
	// read at the first call and re-read whenever the node answers 401,
	// which is what happens after a node restart writes a new cookie.
	CookieFile string
	// RESTURL is the base URL of the REST interface, e.g.
	// "http://127.0.0.1:8332". Empty means http://Host (Core serves REST
	// on the RPC port when started with -rest=1).
	RESTURL string
	// Timeout bounds one HTTP exchange; zero means DefaultTimeout.
	Timeout time.Duration
	// RPCCert is the path of the PEM certificate the node's RPC server
	// presents (btcd's rpc.cert, as lnd's btcd.rpccert). Set, the client
	// speaks HTTPS to Host and trusts only that certificate (checked
	// against the host name or address in Host); empty, plain HTTP. The
	// file is read at the first connection and re-read when it changes.
	RPCCert string
	// MaxConns bounds the client's connections to the node (requests
	// beyond it wait for one); zero means no bound. A client serving
	// peers (cfindexd's block proxy) gets a small one of its own, so
	// that peers never occupy the node's RPC work queue.
	MaxConns int
}

func (c Config) validate() error {
	if c.Host == "" {
		return fmt.Errorf("node client config: Host (host:port of the RPC server) is empty")
	}
	if _, _, err := net.SplitHostPort(c.Host); err != nil {
		return fmt.Errorf("node client config: Host %q is not host:port: %w", c.Host, err)
	}
	if (c.User == "") != (c.Password == "") {
		return fmt.Errorf("node client config: set both rpcuser and rpcpassword, or neither (to use the cookie file)")
	}
	if c.User == "" && c.CookieFile == "" {
		return fmt.Errorf("node client config: no credentials: set rpcuser/rpcpassword or rpccookiefile")
	}
	if c.User != "" && c.CookieFile != "" {
		return fmt.Errorf("node client config: set rpcuser/rpcpassword or rpccookiefile, not both")
	}
	if c.RESTURL != "" {
		u, err := url.Parse(c.RESTURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("node client config: RESTURL %q is not an http(s) URL", c.RESTURL)
		}
	}
	return nil
}

func (c Config) restBase() string {
	if c.RESTURL != "" {
		return strings.TrimRight(c.RESTURL, "/")
	}
	return "http://" + c.Host
}

// DefaultCookiePath returns where Bitcoin Core writes its cookie for chain
// under datadir: main → <datadir>/.cookie, test → testnet3/, testnet4 →
// testnet4/, signet → signet/, regtest → regtest/. chain is the name
// getblockchaininfo reports ("main", "test", "testnet4", "signet",
// "regtest"); the btcd/chaincfg names "mainnet" and "testnet3" are accepted
// too.
func DefaultCookiePath(datadir, chain string) (string, error) {
	var sub string
	switch chain {
	case "main", "mainnet", "bitcoin":
		sub = ""
	case "test", "testnet", "testnet3":
		sub = "testnet3"
	case "testnet4":
		sub = "testnet4"
	case "signet":
		sub = "signet"
	case "regtest":
		sub = "regtest"
	default:
		return "", fmt.Errorf("unknown chain %q (want main, test, testnet4, signet or regtest)", chain)
	}
	return filepath.Join(datadir, sub, ".cookie"), nil
}
