package main

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/netparams"
)

// Bad values of the P2P defence keys stop the daemon with one line naming
// the key.
func TestP2PDefenceKeysRejectBadValues(t *testing.T) {
	for _, tc := range []struct{ flag, want string }{
		{"--maxpeerspersubnet=0", "maxpeerspersubnet"},
		{"--whitelist=10.0.0.0/33", "whitelist"},
		{"--whitelist=not-an-address", "whitelist"},
		{"--sendbudget=0", "sendbudget"},
		{"--peersendbudget=8", "peersendbudget"},
		{"--recvbudget=0", "recvbudget"},
		{"--peerstalltimeout=10ms", "peerstalltimeout"},
		{"--maxblockfetches=0", "maxblockfetches"},
		{"--maxuploadtarget=-1", "maxuploadtarget"},
		{"--txrelayrate=0", "txrelayrate"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := run([]string{tc.flag}, envFrom(nil), &bytes.Buffer{}, &stderr); code == 0 {
				t.Fatal("exit 0 for a bad value")
			}
			if msg := stderr.String(); strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tc.want) {
				t.Fatalf("message %q: want one line naming %s", msg, tc.want)
			}
		})
	}
}

// The keys reach p2p.Config in the right units.
func TestP2PConfigUnits(t *testing.T) {
	cfg, err := loadConfig([]string{"--chain=regtest", "--whitelist=127.0.0.1, 10.0.0.0/8", "--sendbudget=3",
		"--peersendbudget=64", "--recvbudget=2", "--peerstalltimeout=5s", "--maxblockfetches=3",
		"--maxuploadtarget=7", "--txrelayrate=9", "--maxpeerspersubnet=11"}, envFrom(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := p2pConfig(cfg, netparams.Network{Name: "regtest", Params: &chaincfg.RegressionNetParams}, nil, nil, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.0.0.0/8")}
	if len(pc.Whitelist) != 2 || pc.Whitelist[0] != want[0] || pc.Whitelist[1] != want[1] {
		t.Errorf("whitelist %v", pc.Whitelist)
	}
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"SendBudget", pc.SendBudget, 3 << 20},
		{"PeerSendBudget", int64(pc.PeerSendBudget), 64 << 10},
		{"RecvBudget", pc.RecvBudget, 2 << 20},
		{"SendStallTimeout", int64(pc.SendStallTimeout), int64(5 * time.Second)},
		{"MaxBlockFetches", int64(pc.MaxBlockFetches), 3},
		{"MaxUploadTarget", pc.MaxUploadTarget, 7 << 20},
		{"TxRelayRate", int64(pc.TxRelayRate), 9},
		{"MaxPeersPerSubnet", int64(pc.MaxPeersPerSubnet), 11},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

// A configuration file written when maxpeersperip and maxpeerspersubnet
// refused newcomers still loads: the keys are now eviction levels and
// reach p2p.Config unchanged.
func TestP2PLevelKeysFromAnOldFile(t *testing.T) {
	file := writeFile(t, "old.toml", "chain = \"regtest\"\nmaxpeers = 400\nmaxpeersperip = 8\nmaxpeerspersubnet = 32\n")
	cfg, err := loadConfig([]string{"--config=" + file}, envFrom(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := p2pConfig(cfg, netparams.Network{Name: "regtest", Params: &chaincfg.RegressionNetParams}, nil, nil, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if pc.MaxPeers != 400 || pc.MaxPeersPerIP != 8 || pc.MaxPeersPerSubnet != 32 {
		t.Fatalf("maxpeers %d, maxpeersperip %d, maxpeerspersubnet %d", pc.MaxPeers, pc.MaxPeersPerIP, pc.MaxPeersPerSubnet)
	}
}
