package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/tcptest"
)

// storedValue returns the value at height of bucket in the closed store
// at path.
func storedValue(t *testing.T, path, bucket string, height uint32) []byte {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []byte
	err = db.View(func(tx *bolt.Tx) error {
		out = bytes.Clone(tx.Bucket([]byte(bucket)).Get(binary.BigEndian.AppendUint32(nil, height)))
		return nil
	})
	if err != nil || out == nil {
		t.Fatalf("%s at %d: %v", bucket, height, err)
	}
	return out
}

// flipStored flips the byte at offset at of every copy of value in the
// file at path (bbolt leaves old copies on free pages).
func flipStored(t *testing.T, path string, value []byte, at int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := 0; ; {
		j := bytes.Index(data[i:], value)
		if j < 0 {
			break
		}
		data[i+j+at] ^= 0x01
		n++
		i += j + 1
	}
	if n == 0 {
		t.Fatalf("value %x not in the file", value[:8])
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// runVerifyCmd runs `cfindexd verify` and returns its exit code and output.
func runVerifyCmd(t *testing.T, args []string) (int, string) {
	t.Helper()
	out, err := exec.Command(daemonBinary, append([]string{"verify"}, args...)...).CombinedOutput()
	return exitCode(err), string(out)
}

// getLoose is get that tolerates an answer cut short.
func getLoose(url string) (int, []byte) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// cfheaders sends getcfheaders(start, stop) to a new connection and
// returns the answer, or an error when none arrives within limit.
func cfheaders(t *testing.T, addr string, params *chaincfg.Params, start uint32, stop chainhash.Hash, limit time.Duration) (chainhash.Hash, []chainhash.Hash, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	return dialP2P(t, addr, params).GetCFHeaders(ctx, start, stop)
}

// TestChecksumFaultsNeverServed flips one byte of stored filters, filter
// hashes, filter headers and block headers (the header or the hash beside
// it) at several heights of a store the daemon built from btcd across a
// reorg. `cfindexd verify` names each and exits 1; the daemon serves none
// of them over P2P, REST or bulk (each answer is not found, stops before
// the damaged block, or is byte-equal to btcd's), logs each once at ERROR
// with its height, counts it, repairs it from the node, and then serves
// btcd's bytes; verify then exits 0. The background scrub finds and
// repairs a later fault that no client asked for. A damaged block of the
// stale set is reported by verify.
func TestChecksumFaultsNeverServed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{TxIndex: true, WalletSeed: 73})
	const blocks = 120
	if _, err := node.Generate(ctx, blocks); err != nil {
		t.Fatal(err)
	}
	datadir := t.TempDir()
	args := nodeArgs(node, "regtest", datadir)
	indexChain(t, blocks, args...)
	path := filepath.Join(datadir, "regtest", storeFileName)
	stale := reorgTop(ctx, t, node, blocks, args)

	filterBad := []uint32{17, 64}
	hashBad := []uint32{33, 90}
	headerBad := []uint32{50, 101}
	for _, h := range filterBad {
		v := storedValue(t, path, "filters", h)
		flipStored(t, path, v, len(v)/2)
	}
	for _, h := range hashBad {
		flipStored(t, path, storedValue(t, path, "filterheaders", h), 40)
	}
	for _, h := range headerBad {
		flipStored(t, path, storedValue(t, path, "filterheaders", h), 5)
	}
	blockBad := flipBlockHeaders(t, path)
	bad := append(append(append(append([]uint32{}, filterBad...), hashBad...), headerBad...), blockBad...)

	code, out := runVerifyCmd(t, args)
	if code != 1 {
		t.Fatalf("verify on the damaged store: exit %d\n%s", code, out)
	}
	t.Logf("cfindexd verify:\n%s", out)
	for _, h := range bad {
		if !strings.Contains(out, fmt.Sprintf("height %d ", h)) {
			t.Errorf("verify does not report height %d:\n%s", h, out)
		}
	}

	hashOf := func(h uint32) chainhash.Hash { return mustHash(t, node, int32(h)) }
	btcdOf := func(h uint32) (filter []byte, header chainhash.Hash) {
		f, fh, err := node.FilterOf(ctx, hashOf(h))
		if err != nil {
			t.Fatal(err)
		}
		return f, fh
	}
	httpAddr, p2pAddr := tcptest.FreeAddr(t), tcptest.FreeAddr(t)
	args = append(withoutFlag(withoutFlag(args, "httplisten"), "listen"), "--httplisten="+httpAddr, "--listen="+p2pAddr)
	d := startDaemon(t, append(args, "--scrubinterval=0")...)
	base := "http://" + httpAddr
	waitHTTP(t, base+"/healthz", 200, "ok")
	params := node.Params()

	// First reads of each damaged height, over every channel: none
	// serves a wrong byte.
	got, err := cfilters(dialP2P(t, p2pAddr, params), 10, hashOf(20), 11, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got[hashOf(17)]; ok {
		t.Fatal("getcfilters served the damaged filter at 17")
	}
	for hash, f := range got {
		if want, _, _ := node.FilterOf(ctx, hash); !bytes.Equal(f, want) {
			t.Fatalf("getcfilters served a wrong filter for %s", hash)
		}
	}
	if _, hs, err := cfheaders(t, p2pAddr, params, 30, hashOf(40), 3*time.Second); err == nil {
		t.Fatalf("getcfheaders over the damaged filter hash at 33 answered %d hashes", len(hs))
	}
	st, body := getLoose(fmt.Sprintf("%s/bulk/filterheaders/0-%d.bin", base, blocks))
	if st == 200 && len(body) == 32*(blocks+1) {
		t.Fatalf("bulk filterheaders served the damaged header at 50 whole")
	}
	for _, h := range []uint32{64, 90, 101} {
		st, _, body := get(t, base+"/rest/blockfilter/basic/"+hashOf(h).String()+".bin", nil)
		if st != 404 {
			t.Fatalf("REST filter at damaged height %d: %d %q", h, st, body)
		}
	}
	checkHeadersNotServed(ctx, t, node, base, p2pAddr)

	// Each logged once at ERROR with its height, and repaired.
	for _, h := range bad {
		d.waitLog(time.Minute, func(m map[string]any) bool {
			return m["level"] == "info" && m["height"] == float64(h) && strings.HasPrefix(fmt.Sprint(m["message"]), "repaired")
		})
	}
	for _, h := range bad {
		n := d.countLog(func(m map[string]any) bool { return m["level"] == "error" && m["height"] == float64(h) })
		if n != 1 {
			t.Errorf("height %d logged %d times at ERROR, want once", h, n)
		}
	}
	metrics := scrape(t, base)
	if metrics["cfindexd_store_checksum_mismatches_total"] != float64(len(bad)) || metrics["cfindexd_store_repairs_total"] != float64(len(bad)) {
		t.Errorf("metrics: %v mismatches, %v repairs, want %d", metrics["cfindexd_store_checksum_mismatches_total"], metrics["cfindexd_store_repairs_total"], len(bad))
	}

	// Repaired: every channel serves btcd's bytes.
	for _, h := range bad {
		want, _ := btcdOf(h)
		st, _, body := get(t, base+"/rest/blockfilter/basic/"+hashOf(h).String()+".bin", nil)
		if st != 200 || !bytes.Equal(body, coreBlockFilter(hashOf(h), want)) {
			t.Fatalf("REST filter at repaired height %d: %d", h, st)
		}
	}
	got, err = cfilters(dialP2P(t, p2pAddr, params), 10, hashOf(20), 11, 30*time.Second)
	if err != nil || len(got) != 11 {
		t.Fatalf("getcfilters after the repair: %d, %v", len(got), err)
	}
	prev, hs, err := cfheaders(t, p2pAddr, params, 30, hashOf(40), 30*time.Second)
	if err != nil {
		t.Fatalf("getcfheaders after the repair: %v", err)
	}
	_, prevWant := btcdOf(29)
	if prev != prevWant || len(hs) != 11 {
		t.Fatalf("getcfheaders after the repair: prev %s, %d hashes", prev, len(hs))
	}
	for i, fh := range hs {
		f, _ := btcdOf(30 + uint32(i))
		if fh != chainhash.DoubleHashH(f) {
			t.Fatalf("getcfheaders after the repair: hash at %d differs from btcd's", 30+i)
		}
	}
	st, _, body = get(t, fmt.Sprintf("%s/bulk/filterheaders/0-%d.bin", base, blocks), nil)
	if st != 200 || len(body) != 32*(blocks+1) {
		t.Fatalf("bulk filterheaders after the repair: %d, %d bytes", st, len(body))
	}
	for _, h := range headerBad {
		if _, want := btcdOf(h); !bytes.Equal(body[32*h:32*h+32], want[:]) {
			t.Fatalf("bulk filter header at repaired height %d differs from btcd's", h)
		}
	}
	checkHeadersRepaired(ctx, t, node, base, p2pAddr)
	if code, _ := d.terminate(30 * time.Second); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
	if code, out := runVerifyCmd(t, args); code != 0 {
		t.Fatalf("verify after the repair: exit %d\n%s", code, out)
	}

	// The scrub finds what no client asked for.
	v := storedValue(t, path, "filters", 70)
	flipStored(t, path, v, len(v)-1)
	d = startDaemon(t, append(args, "--scrubinterval=10ms")...)
	d.waitLog(time.Minute, func(m map[string]any) bool { return m["level"] == "error" && m["height"] == float64(70) })
	d.waitLog(time.Minute, func(m map[string]any) bool {
		return m["height"] == float64(70) && strings.HasPrefix(fmt.Sprint(m["message"]), "repaired")
	})
	if code, _ := d.terminate(30 * time.Second); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
	if code, out := runVerifyCmd(t, args); code != 0 {
		t.Fatalf("verify after the scrub's repair: exit %d\n%s", code, out)
	}

	// A damaged block of the stale set: verify reports it.
	v = storedStale(t, path, stale)
	flipStored(t, path, v, len(v)-2)
	code, out = runVerifyCmd(t, args)
	if code != 1 || !strings.Contains(out, "stale block at height") || !strings.Contains(out, stale.String()) {
		t.Fatalf("verify with a damaged stale block: exit %d\n%s", code, out)
	}
}

// countLog counts the log lines so far that satisfy pred.
func (d *daemonProc) countLog(pred func(map[string]any) bool) int {
	lines, _ := d.log.Since(0)
	n := 0
	for _, l := range lines {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && pred(m) {
			n++
		}
	}
	return n
}
