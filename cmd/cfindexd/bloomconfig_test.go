package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/mempool"
	"github.com/cfindexd/cfindexd/metrics"
)

// Bad values of the BIP-37 keys stop the daemon with one line naming the
// key; the ZMQ endpoints are checked like zmqpubhashblock.
func TestBloomKeysRejectBadValues(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--bloommaxfpr=0"}, "bloommaxfpr"},
		{[]string{"--bloommaxfpr=1.5"}, "bloommaxfpr"},
		{[]string{"--bloommaxfpr=NaN"}, "bloommaxfpr"},
		{[]string{"--bloommaxfpr=ten"}, "not a number"},
		{[]string{"--bloomminfpr=-0.1"}, "bloomminfpr"},
		{[]string{"--bloomminfpr=1"}, "bloomminfpr"},
		{[]string{"--bloomminfpr=0.2", "--bloommaxfpr=0.1"}, "bloomminfpr"},
		{[]string{"--bloomcpu=0"}, "bloomcpu"},
		{[]string{"--bloomcpu=101"}, "bloomcpu"},
		{[]string{"--mempoolmirror=-1"}, "mempoolmirror"},
		{[]string{"--zmqpubrawtx=127.0.0.1:28333", "--zmqpubsequence=tcp://127.0.0.1:28336"}, "zmqpubrawtx"},
		{[]string{"--zmqpubsequence=tcp://127.0.0.1"}, "zmqpubsequence"},
		{[]string{"--zmqpubrawtx=tcp://127.0.0.1:28333"}, "zmqpubsequence too"},
	} {
		t.Run(strings.Join(tc.flags, " "), func(t *testing.T) {
			var stderr bytes.Buffer
			if code := run(tc.flags, envFrom(nil), &bytes.Buffer{}, &stderr); code == 0 {
				t.Fatal("exit 0 for a bad value")
			}
			if msg := stderr.String(); strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tc.want) {
				t.Fatalf("message %q: want one line naming %s", msg, tc.want)
			}
		})
	}
}

// The keys reach p2p.BloomConfig and the mirror; without peerbloomfilters
// no mirror runs (nothing polls the node's mempool).
func TestBloomConfigWiring(t *testing.T) {
	var node mempool.Source = (*nodeLink)(nil) // never called: Run is not started
	cfg, err := loadConfig([]string{"--chain=regtest"}, envFrom(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.PeerBloomFilters {
		t.Fatal("BIP-37 serving on by default")
	}
	if m, err := newMempoolMirror(cfg, node, zerolog.Nop()); m != nil || err != nil {
		t.Fatalf("mirror %v, err %v without peerbloomfilters", m, err)
	}
	cfg, err = loadConfig([]string{"--chain=regtest", "--peerbloomfilters=true", "--bloommaxfpr=0.5", "--bloomminfpr=0.02",
		"--bloomcpu=40", "--mempoolmirror=8", "--zmqpubsequence=tcp://127.0.0.1:28336", "--zmqpubrawtx=tcp://127.0.0.1:28336"},
		envFrom(map[string]string{"CFINDEXD_BLOOMMAXFPR": "0.7"}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	mirror, err := newMempoolMirror(cfg, node, zerolog.Nop())
	if err != nil || mirror == nil {
		t.Fatalf("mirror %v: %v", mirror, err)
	}
	bc := bloomP2PConfig(cfg, mirror, metrics.New())
	if !bc.Enabled || bc.MaxFPR != 0.5 || bc.MinFPR != 0.02 || bc.CPUShare != 0.4 || bc.Mempool == nil {
		t.Fatalf("BloomConfig %+v", bc)
	}
	cfg.MempoolMirror = 0
	if m, _ := newMempoolMirror(cfg, node, zerolog.Nop()); m != nil {
		t.Fatal("mirror with mempoolmirror = 0")
	}
}
