package main

import (
	"github.com/cfindexd/cfindexd/cmd/cfindexd/internal/replicawire"
	"github.com/cfindexd/cfindexd/httpapi"
)

// replicaKeys are the keys of the read replica (replicawire).
func (c *Config) replicaKeys() replicawire.Keys {
	return replicawire.Keys{Source: c.ReplicaSource, Primary: c.ReplicaPrimary, PollInterval: c.PollInterval,
		ReorgSafetyDepth: uint32(c.ReorgSafetyDepth), AllowDeepReorg: c.AllowDeepReorg}
}

// validateReplica checks the replica keys before validate derives
// anything from the node keys, which a replica must leave at their
// defaults.
func (c *Config) validateReplica() error {
	def, byName := defaultConfig(), map[string]configKey{}
	for _, k := range configKeys() {
		byName[k.Name] = k
	}
	return replicawire.CheckKeys(c.replicaKeys(), func(name string) (string, bool) {
		v := c.keyValue(byName[name])
		return v, v != def.keyValue(byName[name])
	})
}

// setStatus is how a replica's upstream (its primary or its source)
// reaches /status in the node's place: a replica's link has no node.
func (l *nodeLink) setStatus(s httpapi.NodeStatus) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.status = s
}
