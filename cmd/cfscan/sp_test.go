package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/daemontest"
	"github.com/cfindexd/cfindexd/internal/tcptest"
	"github.com/cfindexd/cfindexd/internal/wirescan"
	"github.com/cfindexd/cfindexd/silentpay"
)

// spDaemon is a cfindexd with the silent-payment index on.
type spDaemon struct {
	http string // base URL
	p2p  string // host:port
}

// startSPDaemon runs cfindexd with silentpayments on against node and waits
// until its /sp/checkpoints reach tip.
func startSPDaemon(ctx context.Context, t *testing.T, node *btcdtest.Node, tip int32) spDaemon {
	t.Helper()
	host, port, _ := net.SplitHostPort(node.RPCHost())
	d := spDaemon{http: "http://" + tcptest.FreeAddr(t), p2p: tcptest.FreeAddr(t)}
	daemontest.Start(t, "cfindexd "+d.http, daemonBinary, "--chain=regtest", "--datadir="+t.TempDir(),
		"--rpcconnect="+host, "--rpcport="+port, "--rpcuser="+node.User(), "--rpcpassword="+node.Password(),
		"--nodep2p="+node.P2PAddr(), "--httplisten="+strings.TrimPrefix(d.http, "http://"), "--listen="+d.p2p,
		"--pollinterval=100ms", "--silentpayments=true", "--logformat=json", "--loglevel=info")
	deadline := time.Now().Add(90 * time.Second)
	for {
		var cps struct {
			Height int32 `json:"height"`
		}
		if body, code := httpGet(t, d.http+"/sp/checkpoints"); code == http.StatusOK && json.Unmarshal(body, &cps) == nil && cps.Height >= tip {
			return d
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("cfindexd %s did not index silent payments up to %d within 90 s", d.http, tip)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// httpGet returns url's body and status (0 when the request failed).
func httpGet(t *testing.T, url string) ([]byte, int) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return nil, 0
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0
	}
	return body, resp.StatusCode
}

// fakeServer proxies a cfindexd, optionally lying, serves Core's
// /rest/block/<hash>.bin from btcd, and records every request it gets.
type fakeServer struct {
	*httptest.Server
	upstream string
	node     *btcdtest.Node
	// flipHeight, when non-zero, is the height whose first tweak gets one
	// byte flipped in /sp/tweakdata; rechain also rewrites /sp/headers and
	// /sp/checkpoints to commit to the flipped data, as a consistent liar.
	flipHeight uint32
	rechain    bool

	mu       sync.Mutex
	requests []string // method, URL, headers and body of each request
}

func newFakeServer(t *testing.T, upstream string, node *btcdtest.Node) *fakeServer {
	f := &fakeServer{upstream: upstream, node: node}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	var rec bytes.Buffer
	fmt.Fprintf(&rec, "%s %s\n", r.Method, r.URL)
	_ = r.Header.Write(&rec)
	_, _ = io.Copy(&rec, r.Body)
	f.mu.Lock()
	f.requests = append(f.requests, rec.String())
	f.mu.Unlock()

	if hash, ok := strings.CutPrefix(r.URL.Path, "/rest/block/"); ok {
		h, err := chainhash.NewHashFromStr(strings.TrimSuffix(hash, ".bin"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		blk, err := f.node.Block(r.Context(), *h)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		_ = blk.Serialize(w)
		return
	}
	body, code := f.fetch(r.URL.Path)
	if code == http.StatusOK && f.flipHeight != 0 {
		body = f.lie(r.URL.Path, body)
	}
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

func (f *fakeServer) fetch(path string) ([]byte, int) {
	resp, err := http.Get(f.upstream + path)
	if err != nil {
		return []byte(err.Error()), http.StatusBadGateway
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return body, resp.StatusCode
}

// lie rewrites the answers of file 0 (the test chain is shorter than
// 2,000 blocks; it starts at height 1).
func (f *fakeServer) lie(path string, body []byte) []byte {
	switch {
	case path == "/sp/tweakdata/0":
		return flipTweak(body, f.flipHeight)
	case f.rechain && path == "/sp/headers/0":
		td, _ := f.fetch("/sp/tweakdata/0")
		filters, _ := f.fetch("/sp/filters/0")
		return rechain(body, flipTweak(td, f.flipHeight), filters)
	case f.rechain && path == "/sp/checkpoints":
		hdrBody, _ := f.fetch("/sp/headers/0")
		hdrs := f.lie("/sp/headers/0", hdrBody)
		var cps map[string]any
		if json.Unmarshal(body, &cps) != nil {
			return body
		}
		last := chainhash.Hash(hdrs[len(hdrs)-96 : len(hdrs)-64])
		cps["header"] = last.String()
		out, _ := json.Marshal(cps)
		return out
	}
	return body
}

// flipTweak flips a byte of the x coordinate of the first tweak of height
// h in a /sp/tweakdata/0 body.
func flipTweak(body []byte, h uint32) []byte {
	body = bytes.Clone(body)
	recs, err := parseSPRecords(body, spMaxRecord, spFileHeights)
	if err != nil || int(h) > len(recs) {
		return body
	}
	rec := recs[h-1]     // the file starts at height 1
	rec[1+1+1+4] ^= 0x01 // count, index, prefix, then x
	return body
}

// rechain recomputes a /sp/headers/0 body over tweak data and filters.
func rechain(hdrs, td, filters []byte) []byte {
	tds, err1 := parseSPRecords(td, spMaxRecord, spFileHeights)
	fs, err2 := parseSPRecords(filters, spMaxRecord, spFileHeights)
	out := bytes.Clone(hdrs)
	if err1 != nil || err2 != nil {
		return out
	}
	var prev chainhash.Hash
	for i := 0; i < len(out)/spHeaderRecord && i < len(tds) && i < len(fs); i++ {
		c := silentpay.NewCommitment(tds[i], fs[i])
		prev = c.Header(prev)
		rec := out[i*spHeaderRecord:]
		copy(rec[32:], prev[:])
		copy(rec[64:], c.TweakHash[:])
		copy(rec[96:], c.FilterHash[:])
	}
	return out
}

// Requests returns what the server was sent.
func (f *fakeServer) Requests() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.requests, "\n")
}

// runSPScan runs cfscan sp in-process and returns its JSON report (nil
// unless it exited 0), exit code and stderr.
func runSPScan(ctx context.Context, t *testing.T, args ...string) (*spReport, int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(ctx, append([]string{"sp", "--json"}, args...), &out, &errOut)
	if code != exitOK {
		return nil, code, out.String(), errOut.String()
	}
	var rep spReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("cfscan sp output is not JSON: %v\n%s", err, out.String())
	}
	return &rep, code, out.String(), errOut.String()
}

// TestSPScanAgainstTwoDaemons is issue 19's wallet must-show on a btcd
// regtest chain: two cfindexd with the silent-payment index follow the
// same btcd; cfscan sp, with both as servers and blocks over P2P from one,
// recomputes and cross-checks their commitment chains and finds exactly
// the outputs paying its keys (both k = 0 and k = 1 of one send, label 7,
// the change label), fetching only the two blocks that hold them; the
// block-dn file and BlindBit's tweaks equal the tweaks the test computes
// from its own keys; through a proxy serving Core's REST blocks it finds
// the same without the scan key in any request; a proxy that flips a
// tweak is named, alone (its data no longer hashes to its headers) and as
// a consistent liar (the servers disagree, at that height).
func TestSPScanAgainstTwoDaemons(t *testing.T) {
	if testing.Short() {
		t.Skip("starts btcd and two cfindexd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := buildSPChain(ctx, t)
	a, b := startSPDaemon(ctx, t, c.node, c.tip), startSPDaemon(ctx, t, c.node, c.tip)
	scanHex := hex.EncodeToString(c.wallet.scan.Serialize())
	keyArgs := []string{"--scan-key=" + scanHex, "--spend-pub=" + hex.EncodeToString(c.wallet.spend.PubKey().SerializeCompressed()), "--label=7"}

	rep, code, _, stderr := runSPScan(ctx, t, append(keyArgs, "--server="+a.http, "--server="+b.http, "--peer="+a.p2p, "--chain=regtest")...)
	if rep == nil {
		t.Fatalf("cfscan sp: exit %d: %s", code, stderr)
	}
	checkSPFound(t, rep, c.want)
	if rep.From != 1 || rep.To != uint32(c.tip) || rep.HeadersVerified != 2*int(c.tip) || rep.CrossChecked != int(c.tip) ||
		rep.BlocksFetched != 2 || rep.FalsePositiveBlocks != 0 || rep.Tweaks != len(c.txs) {
		t.Fatalf("report: %+v", rep)
	}

	t.Run("block-dn and BlindBit equal the test's tweaks", func(t *testing.T) {
		checkBlockDN(t, c, a.http)
		checkBlockDN(t, c, b.http)
		checkBlindBit(t, c, a.http)
	})

	t.Run("blocks from REST, the scan key in no request", func(t *testing.T) {
		proxy := newFakeServer(t, b.http, c.node)
		keyFile := filepath.Join(t.TempDir(), "scan.key")
		if err := os.WriteFile(keyFile, []byte(scanHex+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		args := append([]string{"--scan-key=@" + keyFile}, keyArgs[1:]...)
		var out, errOut bytes.Buffer
		code := run(ctx, append(append([]string{"sp"}, args...), "--server="+proxy.URL, "--server="+a.http, "--rest="+proxy.URL), &out, &errOut)
		if code != exitOK || !strings.Contains(out.String(), "4 output(s) found") {
			t.Fatalf("exit %d: %s%s", code, out.String(), errOut.String())
		}
		for _, w := range c.want {
			if !strings.Contains(out.String(), fmt.Sprintf("%s:%d", w.Txid, w.Vout)) {
				t.Errorf("table lacks %s:%d:\n%s", w.Txid, w.Vout, out.String())
			}
		}
		reqs := proxy.Requests()
		if !strings.Contains(reqs, "/rest/block/") || !strings.Contains(reqs, "/sp/tweakdata/0") {
			t.Fatalf("the proxy saw no block or tweak-data request:\n%s", reqs)
		}
		for _, form := range []string{scanHex, strings.ToUpper(scanHex), string(c.wallet.scan.Serialize())} {
			for what, s := range map[string]string{"a request": reqs, "stdout": out.String(), "stderr": errOut.String()} {
				if strings.Contains(s, form) {
					t.Fatalf("the scan key is in %s", what)
				}
			}
		}
	})

	height := uint32(c.txs[0].height)
	for _, tc := range []struct {
		name    string
		rechain bool
		want    []string
	}{
		{"a flipped tweak is named", false, []string{"commitment headers do not commit to: the tweak data of height " + fmt.Sprint(height), "its header record says"}},
		{"a consistent liar disagrees", true, []string{"servers disagree", "tweak data at heights " + fmt.Sprint(height) + ";",
			fmt.Sprintf("commitment headers from height %d on", height)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			liar := newFakeServer(t, b.http, c.node)
			liar.flipHeight, liar.rechain = height, tc.rechain
			_, code, out, stderr := runSPScan(ctx, t, append(keyArgs, "--server="+a.http, "--server="+liar.URL, "--peer="+a.p2p, "--chain=regtest")...)
			if code != exitDisagree || out != "" || !strings.Contains(stderr, liar.URL) || strings.Count(stderr, "\n") != 1 {
				t.Fatalf("exit %d, stdout %q, stderr %q: want exit %d and one line naming %s", code, out, stderr, exitDisagree, liar.URL)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Fatalf("stderr %q lacks %q", stderr, w)
				}
			}
		})
	}
}

// checkSPFound compares the outputs found with want (keys aside) and checks
// each key and tweak: spend key + tweak spends the output.
func checkSPFound(t *testing.T, rep *spReport, want []spFound) {
	t.Helper()
	if len(rep.Found) != len(want) {
		t.Fatalf("found %+v, want %+v", rep.Found, want)
	}
	for i, f := range rep.Found {
		g := f
		g.OutputKey, g.PrivKeyTweak = "", ""
		if g != want[i] {
			t.Fatalf("found %d: %+v, want %+v", i, g, want[i])
		}
		if len(f.OutputKey) != 64 || len(f.PrivKeyTweak) != 64 {
			t.Fatalf("found %d: key %q, tweak %q", i, f.OutputKey, f.PrivKeyTweak)
		}
	}
}

// checkBlockDN holds /sp/tweaks/0/0 to block-dn's format over the tweaks
// the test computed: the 18-byte header, then per height from 0 to the
// tip the count and the 33-byte tweaks (height 0, below the index, empty).
func checkBlockDN(t *testing.T, c *spChain, base string) {
	t.Helper()
	want := binary.LittleEndian.AppendUint32(nil, uint32(c.node.Params().Net))
	want = append(want, 0x00, 0x02)
	want = binary.LittleEndian.AppendUint32(want, 0)
	want = binary.LittleEndian.AppendUint64(want, 0)
	for h := int32(0); h <= c.tip; h++ {
		var tweaks [][33]byte
		for _, tx := range c.txs {
			if tx.height == h {
				tweaks = append(tweaks, tx.tweak)
			}
		}
		want = wirescan.AppendCompactSize(want, uint64(len(tweaks)))
		for _, tw := range tweaks {
			want = append(want, tw[:]...)
		}
	}
	got, code := httpGet(t, base+"/sp/tweaks/0/0")
	if code != http.StatusOK || !bytes.Equal(got, want) {
		t.Fatalf("%s/sp/tweaks/0/0: status %d, %d bytes, want %d bytes:\n got %x\nwant %x", base, code, len(got), len(want), got, want)
	}
}

// checkBlindBit holds /blindbit/tweaks/<h> to the test's tweaks at every
// height with one, with and without a dust limit (BlindBit keeps
// max_value ≥ dustLimit), and at a height without.
func checkBlindBit(t *testing.T, c *spChain, base string) {
	t.Helper()
	heights := map[int32]bool{c.tip: true}
	for _, tx := range c.txs {
		heights[tx.height] = true
	}
	for h := range heights {
		for _, dust := range []int64{0, 2_000_000, 3_000_001} {
			want := []string{}
			for _, tx := range c.txs {
				if tx.height == h && tx.maxValue >= dust {
					want = append(want, hex.EncodeToString(tx.tweak[:]))
				}
			}
			body, code := httpGet(t, fmt.Sprintf("%s/blindbit/tweaks/%d?dustLimit=%d", base, h, dust))
			var got []string
			if code != http.StatusOK || json.Unmarshal(body, &got) != nil || strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("blindbit tweaks at %d, dust %d: status %d, %s; want %q", h, dust, code, body, want)
			}
		}
	}
}
