package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcwallet/walletdb"
	_ "github.com/btcsuite/btcwallet/walletdb/bdb"
	"github.com/lightninglabs/neutrino/chainimport"
	"github.com/lightninglabs/neutrino/headerfs"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/miniotest"
	"github.com/cfindexd/cfindexd/internal/tcptest"
	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/rangefile"
)

// publishBlocks is the chain of the publish tests: three final ranges at
// the smallest reorgsafetydepth, 6.
const (
	publishBlocks = 6010
	publishDepth  = 6
	publishBucket = "cfindexd"
	publishPrefix = "regtest"
)

// publishArgs are the daemon's flags to publish to bucket at endpoint
// (host:port, plain HTTP) and serve HTTP at httpAddr.
func publishArgs(node *btcdtest.Node, datadir, httpAddr, endpoint string) []string {
	return append(withoutFlag(nodeArgs(node, "regtest", datadir), "httplisten"),
		"--httplisten="+httpAddr, "--reorgsafetydepth="+strconv.Itoa(publishDepth),
		"--s3endpoint="+endpoint, "--s3bucket="+publishBucket, "--s3prefix="+publishPrefix, "--s3insecure=true",
		"--s3accesskey="+miniotest.AccessKey, "--s3secretkey="+miniotest.SecretKey)
}

// manifestPublished matches the publisher's line for a manifest ending at
// end or above.
func manifestPublished(end float64) func(map[string]any) bool {
	return func(m map[string]any) bool {
		v, ok := m["end"].(float64)
		return ok && v >= end && m["message"] == "manifest published"
	}
}

// checkPublished fails t unless the public bucket at bucketURL holds, for
// every range final at the daemon's tip, objects byte-identical to what the
// daemon at httpURL serves (the layout routes and the /bulk files), with
// the immutable Cache-Control; a manifest and latest byte-identical to the
// daemon's, whose end filter headers are btcd's getcfilterheader; and the
// import files the daemon serves.
func checkPublished(ctx context.Context, t *testing.T, node *btcdtest.Node, bucketURL, httpURL string, ranges int, tweaks bool) {
	t.Helper()
	fetch := func(url string) ([]byte, string) {
		code, hdr, body := get(t, url, nil)
		if code != 200 {
			t.Fatalf("GET %s: %d %q", url, code, body)
		}
		return body, hdr.Get("Cache-Control")
	}
	mb, cc := fetch(bucketURL + "/" + rangefile.ManifestName)
	if served, _ := fetch(httpURL + "/manifest.json"); string(served) != string(mb) {
		t.Fatalf("the bucket's manifest differs from the daemon's:\n%s\n%s", mb, served)
	}
	if cc != rangefile.MutableCacheControl {
		t.Errorf("manifest Cache-Control %q", cc)
	}
	m, err := rangefile.ParseManifest(mb)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Ranges) != ranges || m.Network != "regtest" {
		t.Fatalf("manifest of %s lists %d ranges, want %d", m.Network, len(m.Ranges), ranges)
	}
	for _, r := range m.Ranges {
		hash, err := node.BlockHash(ctx, int32(r.End))
		if err != nil {
			t.Fatal(err)
		}
		fh, err := node.CFilterHeader(ctx, hash)
		if err != nil {
			t.Fatal(err)
		}
		if r.EndBlockHash != hash.String() || r.EndFilterHeader != fh.String() {
			t.Errorf("range %d ends %s %s; btcd has %s %s", r.Start, r.EndBlockHash, r.EndFilterHeader, hash, fh)
		}
		s, e := strconv.Itoa(int(r.Start)), strconv.Itoa(int(r.End))
		bulk := map[string]string{
			rangefile.HeadersName(r.Start):       "/bulk/headers/" + s + "-" + e + ".bin",
			rangefile.FilterHeadersName(r.Start): "/bulk/filterheaders/" + s + "-" + e + ".bin",
			rangefile.FiltersName(r.Start):       "/bulk/filters/" + s + ".bin",
		}
		for _, dust := range rangefile.DustLevels[:map[bool]int{true: len(rangefile.DustLevels)}[tweaks]] {
			bulk[rangefile.TweaksName(dust, r.Start)] = "/" + rangefile.TweaksName(dust, r.Start)
		}
		if len(r.Objects) != len(bulk) {
			t.Errorf("range %d lists %d objects", r.Start, len(r.Objects))
		}
		for name, sum := range r.Objects {
			obj, cc := fetch(bucketURL + "/" + name)
			layout, _ := fetch(httpURL + "/" + name)
			bulkBytes, _ := fetch(httpURL + bulk[name])
			h := sha256.Sum256(obj)
			if string(obj) != string(layout) || string(obj) != string(bulkBytes) || hex.EncodeToString(h[:]) != sum {
				t.Errorf("%s: bucket %d bytes, layout route %d, %s %d; manifest hash %s", name, len(obj), len(layout), bulk[name], len(bulkBytes), sum)
			}
			if cc != rangefile.ImmutableCacheControl {
				t.Errorf("%s: Cache-Control %q", name, cc)
			}
		}
	}
	for name, imp := range m.Imports {
		obj, _ := fetch(bucketURL + "/" + name)
		served, _ := fetch(httpURL + "/" + name)
		h := sha256.Sum256(obj)
		if string(obj) != string(served) || hex.EncodeToString(h[:]) != imp.SHA256 || len(obj) == 0 {
			t.Errorf("%s: bucket %d bytes, daemon %d", name, len(obj), len(served))
		}
	}
	lb, _ := fetch(bucketURL + "/" + rangefile.LatestName)
	if served, _ := fetch(httpURL + "/latest"); string(served) != string(lb) {
		t.Errorf("latest: bucket %s, daemon %s", lb, served)
	}
}

// TestPublishToMinIO: cfindexd beside btcd, with the silent-payment
// index, publishes every final range of a three-range chain to a real
// MinIO; each object in the bucket (the tweak files too), read anonymously
// as through a CDN, is byte-identical to what cfindexd serves for it, the
// manifest's hashes and end filter headers are right, and /metrics
// reports the published height; neutrino's chainimport reads the block
// and filter headers straight from the bucket's import files.
func TestPublishToMinIO(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(10*time.Minute))
	defer cancel()
	s3 := miniotest.Start(t)
	s3.CreateBucket(t, publishBucket, true)
	node := btcdtest.Start(t, btcdtest.Options{TxIndex: true, WalletSeed: 91})
	if _, err := node.Generate(ctx, publishBlocks); err != nil {
		t.Fatal(err)
	}
	httpAddr := tcptest.FreeAddr(t)
	d := startDaemon(t, append(publishArgs(node, t.TempDir(), httpAddr, s3.Endpoint), "--silentpayments=true")...)
	d.waitLog(5*time.Minute, manifestPublished(3*rangefile.Size-1))
	checkPublished(ctx, t, node, s3.URL(publishBucket)+"/"+publishPrefix, "http://"+httpAddr, 3, true)
	importFromBucket(ctx, t, node, s3.URL(publishBucket)+"/"+publishPrefix, 3*rangefile.Size-1)
	// Each manifest written puts the two import files, the manifest and
	// latest anew; every range object goes up once.
	manifests := 0
	for _, l := range d.log.Lines() {
		if strings.Contains(l, `"message":"manifest published"`) {
			manifests++
		}
	}
	uploaded := "cfindexd_publish_objects_uploaded_total " + strconv.Itoa(3*7+4*manifests) + "\n"
	if _, _, body := get(t, "http://"+httpAddr+"/metrics", nil); !strings.Contains(string(body), "cfindexd_publish_height 5999\n") ||
		!strings.Contains(string(body), uploaded) {
		t.Errorf("publish metrics:\n%s", grepLines(string(body), "cfindexd_publish_"))
	}
	if code, _ := d.terminate(30 * time.Second); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
}

// importFromBucket runs neutrino's chainimport (v0.18.0) from the
// bucket's import files into fresh header stores, as lnd's
// neutrino.blockheaderssource and neutrino.filterheaderssource do: it
// checks regtest proof of work and the filter-header chain; the stores
// must then end at btcd's block and filter header at end.
func importFromBucket(ctx context.Context, t *testing.T, node *btcdtest.Node, bucketURL string, end uint32) {
	t.Helper()
	params := chaincfg.RegressionNetParams
	dir := t.TempDir()
	db, err := walletdb.Create("bdb", filepath.Join(dir, "neutrino.db"), true, 10*time.Second, false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	bs, err := headerfs.NewBlockHeaderStore(dir, db, &params)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := headerfs.NewFilterHeaderStore(dir, db, headerfs.RegularFilter, &params, nil)
	if err != nil {
		t.Fatal(err)
	}
	imp, err := chainimport.NewHeadersImport(&chainimport.ImportOptions{
		TargetChainParams: params, TargetBlockHeaderStore: bs, TargetFilterHeaderStore: fs,
		BlockHeadersSource:  bucketURL + "/" + rangefile.HeadersImportName,
		FilterHeadersSource: bucketURL + "/" + rangefile.FilterHeadersImportName,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := imp.Import(ctx); err != nil {
		t.Fatalf("neutrino chainimport from the bucket: %v", err)
	}
	hash, err := node.BlockHash(ctx, int32(end))
	if err != nil {
		t.Fatal(err)
	}
	fh, err := node.CFilterHeader(ctx, hash)
	if err != nil {
		t.Fatal(err)
	}
	hdr, height, err := bs.ChainTip()
	if err != nil || height != end || hdr.BlockHash() != hash {
		t.Errorf("neutrino's block tip after the import: %d (%v), want %d %s", height, err, end, hash)
	}
	if got, fheight, err := fs.ChainTip(); err != nil || fheight != end || *got != fh {
		t.Errorf("neutrino's filter tip after the import: %d (%v), want %d %s", fheight, err, end, fh)
	}
}
