package main

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cfindexd/cfindexd/netparams"
)

// validate checks every value once at start so that a bad value fails with
// one line instead of surfacing later.
func (c *Config) validate() error {
	nw, err := netparams.Lookup(c.Chain)
	if err != nil {
		return err
	}
	c.Chain = nw.Name
	if err := c.validateReplica(); err != nil {
		return err
	}
	if c.DataDir == "" {
		return errors.New("datadir: must not be empty")
	}
	if c.RPCConnect == "" {
		return errors.New("rpcconnect: must not be empty")
	}
	if c.RPCPort < 0 || c.RPCPort > 65535 {
		return fmt.Errorf("rpcport: %d is not a TCP port (0 = the chain's default)", c.RPCPort)
	}
	if (c.RPCUser == "") != (c.RPCPassword == "") {
		return errors.New("rpcuser and rpcpassword: set both, or neither to use the cookie file")
	}
	if c.RPCUser == "" && c.RPCCookieFile == "" {
		c.RPCCookieFile = filepath.Join(c.BitcoinDataDir, nw.CookieSubdir, ".cookie")
	}
	switch c.PrevoutSource {
	case "auto", "blocksdir", "rest", "getblock", "txindex":
	default:
		return fmt.Errorf("prevoutsource: %q is not auto, blocksdir, rest, getblock or txindex", c.PrevoutSource)
	}
	if c.BlocksDir == "" {
		c.BlocksDir = filepath.Join(c.BitcoinDataDir, nw.CookieSubdir, "blocks")
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
	if err := c.validateP2PDefences(); err != nil {
		return err
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
	if err := c.validateScrub(); err != nil {
		return err
	}
	if err := c.validateReorgReady(); err != nil {
		return err
	}
	if err := c.validateHTTPLimits(); err != nil {
		return err
	}
	if err := c.validateBloom(); err != nil {
		return err
	}
	if err := c.s3Keys().Check(); err != nil {
		return err
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
