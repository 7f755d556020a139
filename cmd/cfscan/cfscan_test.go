package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/daemontest"
	"github.com/cfindexd/cfindexd/internal/p2pclient"
)

// daemonBinary is the cfindexd binary, built once for these tests.
var daemonBinary string

func TestMain(m *testing.M) { daemontest.Main(m, &daemonBinary) }

// scanChain is a btcd regtest chain with a known payment to a watched
// P2WPKH address, a payment to a watched P2PKH script, and a later spend of
// the first.
type scanChain struct {
	node       *btcdtest.Node
	addr       string // watched P2WPKH address
	p2pkh      []byte // watched P2PKH script
	pay, spend chainhash.Hash
	payHeight  int32
	spendHt    int32
	tip        int32
}

const (
	paymentAmount = 1_234_567
	emptyBlocks   = 1000
)

// buildScanChain builds the chain in a btcd started with extra flags.
func buildScanChain(ctx context.Context, t *testing.T, extra ...string) *scanChain {
	t.Helper()
	node := btcdtest.Start(t, btcdtest.Options{TxIndex: true, Extra: extra})
	w := node.Wallet()
	// The payment lands past the first filter-header checkpoint (height
	// 1,000), so scans can start from it.
	for mined := 0; mined < emptyBlocks; {
		n := min(490, emptyBlocks-mined)
		if _, err := node.Generate(ctx, n); err != nil {
			t.Fatal(err)
		}
		mined += n
	}
	if err := btcdtest.BuildTxRichChain(ctx, node, w, 30); err != nil {
		t.Fatal(err)
	}
	c := &scanChain{node: node}
	script, err := w.NewScript(btcdtest.KindP2WPKH)
	if err != nil {
		t.Fatal(err)
	}
	a, err := address.NewAddressWitnessPubKeyHash(script[2:], node.Params())
	if err != nil {
		t.Fatal(err)
	}
	c.addr = a.EncodeAddress()
	if c.p2pkh, err = w.NewScript(btcdtest.KindP2PKH); err != nil {
		t.Fatal(err)
	}
	tx, err := w.Send(ctx, node, []*wire.TxOut{wire.NewTxOut(paymentAmount, script), wire.NewTxOut(777_000, c.p2pkh)})
	if err != nil {
		t.Fatal(err)
	}
	c.pay = tx.TxHash()
	c.payHeight = mine(ctx, t, node, 1)
	if _, err := node.Generate(ctx, 20); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(ctx, node); err != nil {
		t.Fatal(err)
	}
	u, ok := w.Reserve(wire.OutPoint{Hash: c.pay, Index: 0})
	if !ok {
		t.Fatal("the watched output is not spendable")
	}
	back, err := w.BuildTx([]btcdtest.UTXO{u}, nil, w.MiningScript(), btcdtest.DefaultFeeRate)
	if err != nil {
		t.Fatal(err)
	}
	if c.spend, err = node.SendRawTransaction(ctx, back); err != nil {
		t.Fatal(err)
	}
	c.spendHt = mine(ctx, t, node, 1)
	c.tip = mine(ctx, t, node, 15) + 14
	return c
}

// mine mines n blocks and returns the height of the first.
func mine(ctx context.Context, t *testing.T, node *btcdtest.Node, n int) int32 {
	t.Helper()
	if _, err := node.Generate(ctx, n); err != nil {
		t.Fatal(err)
	}
	_, tip, err := node.BestBlock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return tip - int32(n) + 1
}

// startDaemon runs cfindexd against node, serving P2P on a free port, and
// waits until it serves headers up to tip.
func startDaemon(ctx context.Context, t *testing.T, node *btcdtest.Node, tip int32) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(node.RPCHost())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p2pAddr := l.Addr().String()
	l.Close()
	daemontest.Start(t, "cfindexd", daemonBinary, "--chain=regtest", "--datadir="+t.TempDir(),
		"--rpcconnect="+host, "--rpcport="+port, "--rpcuser="+node.User(), "--rpcpassword="+node.Password(),
		"--nodep2p="+node.P2PAddr(), "--httplisten=", "--listen="+p2pAddr, "--pollinterval=100ms",
		"--logformat=json", "--loglevel=info")
	deadline := time.Now().Add(90 * time.Second)
	for {
		if n, err := servedHeaders(ctx, p2pAddr, node); err == nil && n >= int(tip) {
			return p2pAddr
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("cfindexd did not serve headers up to %d within 90 s", tip)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func servedHeaders(ctx context.Context, addr string, node *btcdtest.Node) (int, error) {
	p, err := p2pclient.Dial(ctx, addr, p2pclient.Options{Params: node.Params(), Timeout: 5 * time.Second})
	if err != nil {
		return 0, err
	}
	defer p.Close()
	hs, err := p.GetHeaders(ctx, []chainhash.Hash{*node.Params().GenesisHash}, chainhash.Hash{})
	return len(hs), err
}

// runScan runs cfscan in-process and decodes its JSON report.
func runScan(ctx context.Context, t *testing.T, args ...string) (*scanReport, int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(ctx, append(args, "--json"), &out, &errOut)
	if code != exitOK && code != exitDisagree {
		return nil, code, errOut.String()
	}
	var rep scanReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("cfscan output is not JSON: %v\n%s", err, out.String())
	}
	return &rep, code, errOut.String()
}

// TestScanFindsPaymentBothWays is the cfscan must-show on a btcd
// regtest chain with transactions of every script kind: BIP-158 against
// the real cfindexd daemon (filter headers checked against its
// getcfcheckpt) and BIP-37 against btcd, which serves Bloom filters, both
// find the payment to the watched address and to the watched script (txid,
// height, output, amount, address) and the later spend of the first, with
// identical results; the report shows bytes downloaded, blocks fetched and
// the noise share. A second run cross-checks cfindexd's filter headers
// against btcd's and prints the table.
func TestScanFindsPaymentBothWays(t *testing.T) {
	if testing.Short() {
		t.Skip("starts btcd and cfindexd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := buildScanChain(ctx, t)
	cfindexd := startDaemon(ctx, t, c.node, c.tip)
	seed := strings.Repeat("ab", 32)
	args := []string{"--chain=regtest", "--peer=" + cfindexd, "--bloompeer=" + c.node.P2PAddr(),
		"--address=" + c.addr, fmt.Sprintf("--script=%x", c.p2pkh), "--rotate=50", "--seed=" + seed}
	rep, code, stderr := runScan(ctx, t, args...)
	if rep == nil {
		t.Fatalf("cfscan exit %d: %s", code, stderr)
	}
	if code != exitOK || rep.Agree == nil || !*rep.Agree {
		t.Fatalf("exit %d, agree %v; methods:\n%+v\n%+v", code, rep.Agree, rep.Methods[0].Matches, rep.Methods[1].Matches)
	}
	// btcd without --v2transport hangs up on cfscan's v2 key; cfscan
	// connects again over v1.
	if got := rep.Transports[c.node.P2PAddr()]; got != "v1" {
		t.Errorf("btcd (v1 only) scanned over %q, want v1 after the fallback", got)
	}
	if rep.Tip != uint32(c.tip) || rep.End != uint32(c.tip) || len(rep.Methods) != 2 {
		t.Fatalf("report covers %d–%d of tip %d with %d methods", rep.Start, rep.End, rep.Tip, len(rep.Methods))
	}
	want := []Match{
		{Txid: c.pay.String(), Height: uint32(c.payHeight), Kind: "receive", Index: 0, Amount: paymentAmount, Address: c.addr},
		{Txid: c.pay.String(), Height: uint32(c.payHeight), Kind: "receive", Index: 1, Amount: 777_000, Address: scriptAddress(c.p2pkh, c.node.Params())},
		{Txid: c.spend.String(), Height: uint32(c.spendHt), Kind: "spend", Index: 0, Amount: paymentAmount, Address: c.addr,
			Spent: wire.OutPoint{Hash: c.pay, Index: 0}.String()},
	}
	for _, m := range rep.Methods {
		if len(m.Matches) != len(want) {
			t.Fatalf("%s found %+v, want %+v", m.Method, m.Matches, want)
		}
		for i := range want {
			if m.Matches[i] != want[i] {
				t.Fatalf("%s match %d: %+v, want %+v", m.Method, i, m.Matches[i], want[i])
			}
		}
		if m.BytesDownloaded <= 0 || m.BlocksFetched == 0 {
			t.Errorf("%s: %d bytes, %d blocks fetched", m.Method, m.BytesDownloaded, m.BlocksFetched)
		}
	}
	f158, f37 := rep.Methods[0], rep.Methods[1]
	if f158.Method != "bip158" || f158.BlocksFetched < 2 || f158.FiltersDownloaded != int(c.tip)+1 {
		t.Errorf("BIP-158: %d blocks fetched, %d filters", f158.BlocksFetched, f158.FiltersDownloaded)
	}
	if f37.Method != "bip37" || f37.FiltersLoaded != int(c.tip)/50+1 || f37.NoiseElements == 0 || f37.NoiseShare <= 0 ||
		f37.BlocksFetched != int(c.tip)+1 {
		t.Errorf("BIP-37: %d filters loaded, %d noise elements (share %.2f), %d filtered blocks", f37.FiltersLoaded, f37.NoiseElements, f37.NoiseShare, f37.BlocksFetched)
	}
	t.Logf("BIP-158: %d bytes, %d blocks fetched (%d false positive), %d filters, %d checkpoints; BIP-37: %d bytes, %d filtered blocks, %d filters, noise %d/%d (%.0f%%), %d false-positive txs",
		f158.BytesDownloaded, f158.BlocksFetched, f158.FalsePositiveBlocks, f158.FiltersDownloaded, f158.CheckpointsVerified,
		f37.BytesDownloaded, f37.BlocksFetched, f37.FiltersLoaded, f37.NoiseElements, f37.Elements+f37.NoiseElements, 100*f37.NoiseShare, f37.FalsePositiveTxs)

	if f158.CheckpointsVerified != 1 {
		t.Errorf("BIP-158 verified %d checkpoints, want the one at 1,000", f158.CheckpointsVerified)
	}

	// Two BIP-157 peers (cfindexd and btcd) cross-checked, from a start
	// above the checkpoint, whose header the chain then starts from; the
	// same matches.
	const start = 1010
	if c.payHeight <= start {
		t.Fatalf("payment at %d, not above %d", c.payHeight, start)
	}
	rep2, code, stderr := runScan(ctx, t, "--chain=regtest", "--peer="+cfindexd, "--peer="+c.node.P2PAddr(),
		"--address="+c.addr, fmt.Sprintf("--script=%x", c.p2pkh), "--method=bip158", fmt.Sprint("--start=", start))
	if rep2 == nil || code != exitOK {
		t.Fatalf("cross-checked scan: exit %d: %s", code, stderr)
	}
	if m := rep2.Methods[0]; m.CrossChecked != int(c.tip)-1000 || m.CheckpointsVerified != 1 || len(m.Matches) != len(want) ||
		m.FiltersDownloaded != int(c.tip)-start+1 {
		t.Fatalf("cross-checked scan: %d filter headers compared, %d checkpoints, %d filters, %d matches",
			m.CrossChecked, m.CheckpointsVerified, m.FiltersDownloaded, len(m.Matches))
	}

	// The table a person reads.
	var out, errOut bytes.Buffer
	if code := run(ctx, args, &out, &errOut); code != exitOK {
		t.Fatalf("table run: exit %d: %s", code, errOut.String())
	}
	for _, s := range []string{c.pay.String(), c.spend.String(), "BIP-158 compact block filters", "BIP-37 Bloom filter",
		"were noise", "Both methods found the same 3 match(es)."} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, out.String())
		}
	}
	_, _ = io.Discard.Write(out.Bytes())
}

// TestScanOverV2: against btcd serving BIP-324 v2 (--v2transport), the
// default transport scans over v2 (the headers, getcfcheckpt,
// getcfheaders, getcfilters, blocks, filterload and filtered blocks) and
// --transport=v2 insists on it; both methods find what a v1 scan of the
// same chain finds, match for match, and the table names the transport.
func TestScanOverV2(t *testing.T) {
	if testing.Short() {
		t.Skip("starts btcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := buildScanChain(ctx, t, "--v2transport")
	btcd := c.node.P2PAddr()
	args := []string{"--chain=regtest", "--peer=" + btcd, "--method=both", "--address=" + c.addr,
		fmt.Sprintf("--script=%x", c.p2pkh), "--rotate=50", "--seed=" + strings.Repeat("cd", 32)}
	reports := map[string]*scanReport{}
	for _, tc := range []struct{ transport, want string }{{"v1", "v1"}, {"v2", "v2"}, {"auto", "v2"}} {
		rep, code, stderr := runScan(ctx, t, append(args, "--transport="+tc.transport)...)
		if rep == nil || code != exitOK || rep.Agree == nil || !*rep.Agree {
			t.Fatalf("--transport=%s: exit %d: %s", tc.transport, code, stderr)
		}
		if got := rep.Transports[btcd]; got != tc.want {
			t.Fatalf("--transport=%s: scanned over %q, want %s", tc.transport, got, tc.want)
		}
		reports[tc.transport] = rep
	}
	v1 := reports["v1"]
	if len(v1.Methods) != 2 || len(v1.Methods[0].Matches) != 3 {
		t.Fatalf("v1 scan: %+v", v1.Methods)
	}
	for _, tr := range []string{"v2", "auto"} {
		for i, m := range reports[tr].Methods {
			w := v1.Methods[i]
			if m.Method != w.Method || !slices.Equal(m.Matches, w.Matches) || m.BlocksFetched != w.BlocksFetched ||
				m.FiltersDownloaded != w.FiltersDownloaded || m.FiltersLoaded != w.FiltersLoaded {
				t.Fatalf("--transport=%s %s: %+v, v1 found %+v", tr, m.Method, m, w)
			}
		}
	}

	// The table of the default run (not a fifth v2 handshake: btcd admits
	// four at once from one source, then two a second).
	var out bytes.Buffer
	if err := writeTable(&out, reports["auto"]); err != nil || !strings.Contains(out.String(), btcd+" over v2") {
		t.Fatalf("table: %v\n%s", err, out.String())
	}
}

// Against a default cfindexd, which serves no BIP-37 Bloom filters
// (peerbloomfilters is off by default): the default method scans with
// BIP-158 alone and says so in one line naming the flag; a method that
// needs Bloom filters is refused with one line, naming --method=bip158
// when BIP-158 could have run.
func TestScanRefusesPeerWithoutService(t *testing.T) {
	if testing.Short() {
		t.Skip("starts btcd and cfindexd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{TxIndex: true})
	if _, err := node.Generate(ctx, 5); err != nil {
		t.Fatal(err)
	}
	cfindexd := startDaemon(ctx, t, node, 5)
	base := []string{"--chain=regtest", "--peer=" + cfindexd, "--address=bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080"}

	rep, code, notes := runScan(ctx, t, base...)
	if code != exitOK || rep == nil || len(rep.Methods) != 1 || rep.Methods[0].Method != "bip158" || rep.End != 5 {
		t.Fatalf("default method: exit %d, report %+v, stderr %q", code, rep, notes)
	}
	if !strings.Contains(notes, "scanning with BIP-158 only") || !strings.Contains(notes, "peerbloomfilters") || strings.Count(notes, "\n") != 1 {
		t.Errorf("default method: stderr %q, want one line saying BIP-37 is skipped and why", notes)
	}

	for _, tc := range []struct{ method, want string }{
		{"bip37", "lacks a required service"},
		{"both", "--method=bip158"},
	} {
		var out, errOut bytes.Buffer
		code := run(ctx, append(base, "--method="+tc.method), &out, &errOut)
		if code != exitError || !strings.Contains(errOut.String(), tc.want) || strings.Count(errOut.String(), "\n") != 1 {
			t.Errorf("--method=%s: exit %d, stderr %q, want one line with %q", tc.method, code, errOut.String(), tc.want)
		}
	}
}

func TestParseFlagsRefusesBadInput(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--peer=a:1", "--method=bip39"},
		{"--peer=a:1", "--peer=b:1", "--peer=c:1"},
		{"--peer=a:1", "--start=10", "--end=5"},
		{"--peer=a:1", "--fpr=1"},
		{"--peer=a:1", "--rotate=0"},
		{"--peer=a:1", "stray"},
		{"--peer=a:1", "--transport=v3"},
	} {
		var errOut bytes.Buffer
		if code := run(context.Background(), args, io.Discard, &errOut); code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, exitUsage, errOut.String())
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--peer=127.0.0.1:1", "--chain=nope", "--address=x"}, "unknown chain"},
		{[]string{"--peer=127.0.0.1:1", "--chain=regtest", "--address=1BoatSLRHtKNngkdXEeobR76b53LETtpyT"}, "not a valid regtest address"},
		{[]string{"--peer=127.0.0.1:1", "--chain=regtest", "--script=zz"}, "not a non-empty hex"},
		{[]string{"--peer=127.0.0.1:1", "--chain=regtest"}, "nothing to watch"},
		{[]string{"--peer=127.0.0.1:1", "--chain=regtest", "--script=51", "--seed=00"}, "--seed"},
	} {
		var errOut bytes.Buffer
		if code := run(context.Background(), tc.args, io.Discard, &errOut); code != exitError || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errOut.String(), tc.want)
		}
	}
}
