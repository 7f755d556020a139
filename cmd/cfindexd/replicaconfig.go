package main

import (
	"fmt"
	"net"
	"net/url"
	"reflect"
)

// replicaMode reports whether the configuration runs a read replica.
func (c *Config) replicaMode() bool { return c.ReplicaSource != "" || c.ReplicaPrimary != "" }

// replicaNodeKeys are the keys that configure the node link, which a
// replica does not have: set to anything but their default beside
// replicasource or replicaprimary, they are a mistake worth one line.
func replicaNodeKeys() []string {
	return []string{"rpcconnect", "rpcport", "rpcuser", "rpcpassword", "rpccookiefile", "resturl", "prevoutsource",
		"nodep2p", "zmqpubhashblock", "zmqpubrawtx", "zmqpubsequence", "blocksdir", "rpccert", "rpcthreads",
		"relaytx", "peerbloomfilters", "silentpayments"}
}

// validateReplica checks the replica keys, before validate derives
// anything from the node keys.
func (c *Config) validateReplica() error {
	if !c.replicaMode() {
		return nil
	}
	mode := "replicasource"
	if c.ReplicaSource == "" {
		mode = "replicaprimary"
	}
	def := defaultConfig()
	byName := map[string]configKey{}
	for _, k := range configKeys() {
		byName[k.Name] = k
	}
	for _, name := range replicaNodeKeys() {
		k := byName[name]
		if !reflect.DeepEqual(reflect.ValueOf(c).Elem().Field(k.Index).Interface(), reflect.ValueOf(&def).Elem().Field(k.Index).Interface()) {
			return fmt.Errorf("%s: a read replica has no node, so %s (set to %s) does not apply: remove it, or remove %s to follow a node", mode, name, c.keyValue(k), mode)
		}
	}
	if c.ReplicaSource != "" {
		u, err := url.Parse(c.ReplicaSource)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("replicasource: %q is not an http(s)://host[:port][/path] URL", c.ReplicaSource)
		}
	}
	if c.ReplicaPrimary != "" {
		if host, port, err := net.SplitHostPort(c.ReplicaPrimary); err != nil || host == "" || port == "" {
			return fmt.Errorf("replicaprimary: %q is not host:port", c.ReplicaPrimary)
		}
	}
	return nil
}
