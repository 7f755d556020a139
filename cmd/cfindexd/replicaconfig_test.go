package main

import (
	"io"
	"strings"
	"testing"
)

// TestReplicaConfig: the replica keys are checked at start, and a node key
// beside them is one line naming both.
func TestReplicaConfig(t *testing.T) {
	home := []string{"HOME=" + t.TempDir()}
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string // "" = valid
	}{
		{"source only", []string{"--replicasource=https://filters.example.com/main"}, ""},
		{"primary only", []string{"--replicaprimary=10.0.0.5:8383"}, ""},
		{"both", []string{"--replicasource=http://primary:8384", "--replicaprimary=primary:8383"}, ""},
		{"a node key", []string{"--replicasource=http://primary:8384", "--rpcconnect=10.0.0.1"},
			"replicasource: a read replica has no node, so rpcconnect (set to 10.0.0.1) does not apply"},
		{"zmq", []string{"--replicaprimary=primary:8383", "--zmqpubhashblock=tcp://127.0.0.1:28332"},
			"replicaprimary: a read replica has no node, so zmqpubhashblock"},
		{"silent payments", []string{"--replicaprimary=primary:8383", "--silentpayments=true"}, "so silentpayments (set to true) does not apply"},
		{"publishing", []string{"--replicaprimary=primary:8383", "--s3bucket=b", "--s3endpoint=127.0.0.1:9000"}, "so s3bucket (set to b) does not apply"},
		{"source not a URL", []string{"--replicasource=primary:8384"}, `replicasource: "primary:8384" is not an http(s)://host[:port][/path] URL`},
		{"source with a query", []string{"--replicasource=https://x/y?a=b"}, "is not an http(s)"},
		{"primary without a port", []string{"--replicaprimary=primary"}, `replicaprimary: "primary" is not host:port`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadConfig(tc.args, home, io.Discard)
			if tc.wantErr == "" {
				if err != nil || !cfg.replicaKeys().On() {
					t.Fatalf("err %v, replica mode %v", err, cfg.replicaKeys().On())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			}
		})
	}
	if cfg, err := loadConfig(nil, home, io.Discard); err != nil || cfg.replicaKeys().On() {
		t.Fatalf("defaults: %v, replica mode %v", err, cfg.replicaKeys().On())
	}
}
