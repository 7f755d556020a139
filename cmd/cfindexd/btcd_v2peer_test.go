package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/tcptest"
	"github.com/cfindexd/cfindexd/internal/testtime"
)

// TestBtcdOutboundV2Peer starts a real btcd with --v2transport and
// --connect=<cfindexd's P2P address>: btcd dials cfindexd as an outbound
// peer and must settle on BIP-324 v2 (cfindexd's /metrics counts one v2
// peer and one v2 handshake that succeeded), complete the version
// handshake (btcd's getpeerinfo lists cfindexd with its version and user
// agent) and stay connected while it exchanges messages (btcd's bytes
// received from cfindexd keep growing past the handshake, cfindexd still
// counting it as a v2 peer).
func TestBtcdOutboundV2Peer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(3*time.Minute))
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{Net: "simnet", TxIndex: true, WalletSeed: 93})
	if _, err := node.Generate(ctx, 110); err != nil {
		t.Fatal(err)
	}
	httpAddr, p2pAddr := tcptest.FreeAddr(t), tcptest.FreeAddr(t)
	args := append(withoutFlag(withoutFlag(nodeArgs(node, "simnet", t.TempDir()), "httplisten"), "listen"),
		"--httplisten="+httpAddr, "--listen="+p2pAddr, "--pollinterval=200ms")
	d := startDaemon(t, args...)
	d.waitLog(60*time.Second, heightAtLeast(110))

	peer := btcdtest.Start(t, btcdtest.Options{Net: "simnet", WalletSeed: 94,
		Extra: []string{"--v2transport", "--connect=" + p2pAddr}})
	metrics := "http://" + httpAddr + "/metrics"
	waitHTTP(t, metrics, 200, `cfindexd_p2p_transport_peers{transport="v2"} 1`)
	waitHTTP(t, metrics, 200, `cfindexd_p2p_v2_handshakes_total{result="ok"} 1`)

	type peerInfo struct {
		Addr      string `json:"addr"`
		Services  string `json:"services"`
		Version   uint32 `json:"version"`
		SubVer    string `json:"subver"`
		BytesRecv uint64 `json:"bytesrecv"`
		BytesSent uint64 `json:"bytessent"`
	}
	cfindexdPeer := func() (peerInfo, error) {
		var infos []peerInfo
		if err := peer.Call(ctx, "getpeerinfo", nil, &infos); err != nil {
			return peerInfo{}, err
		}
		for _, p := range infos {
			if p.Addr == p2pAddr {
				return p, nil
			}
		}
		return peerInfo{}, fmt.Errorf("btcd lists no peer %s among %+v", p2pAddr, infos)
	}
	var first peerInfo
	deadline := time.Now().Add(testtime.Scale(30 * time.Second))
	for {
		p, err := cfindexdPeer()
		if err == nil && p.Version > 0 && strings.Contains(p.SubVer, "cfindexd") {
			first = p
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("btcd never completed the version handshake with cfindexd: %+v, %v", p, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("btcd's view of cfindexd after the handshake: %+v", first)
	// btcd pings every two minutes; it also asks for headers and
	// addresses after the handshake: wait until more arrives from
	// cfindexd than its version and verack.
	for {
		p, err := cfindexdPeer()
		if err != nil {
			t.Fatalf("btcd dropped cfindexd after the handshake: %v", err)
		}
		if p.BytesRecv > first.BytesRecv && p.BytesSent > first.BytesSent {
			t.Logf("btcd's view of cfindexd later: %+v", p)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no messages exchanged past the handshake: %+v then %+v", first, p)
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitHTTP(t, metrics, 200, `cfindexd_p2p_transport_peers{transport="v2"} 1`)
}
