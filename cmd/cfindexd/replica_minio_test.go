package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/lightninglabs/neutrino"
	"github.com/minio/minio-go/v7"

	"github.com/cfindexd/cfindexd/internal/lightclient"
	"github.com/cfindexd/cfindexd/internal/miniotest"
	"github.com/cfindexd/cfindexd/internal/tcptest"
	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/replica/layouttest"
)

// startPublishingPrimary is startReplicaPrimary whose daemon also
// publishes its final ranges to a public MinIO bucket below prefix pfx; it
// returns once the bucket's latest is there.
func startPublishingPrimary(t *testing.T, ctx context.Context, srv *miniotest.Server, bucket string) *replicaPrimary {
	t.Helper()
	srv.CreateBucket(t, bucket, true)
	p := startReplicaPrimaryWith(t, ctx, "--s3endpoint="+srv.Endpoint, "--s3bucket="+bucket, "--s3prefix=pfx", "--s3insecure=true",
		"--s3accesskey="+miniotest.AccessKey, "--s3secretkey="+miniotest.SecretKey)
	deadline := time.Now().Add(testtime.Scale(2 * time.Minute))
	for {
		resp, err := http.Get(srv.URL(bucket) + "/pfx/latest")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the primary published no latest to %s (last error %v)", srv, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestReplicaFromMinIOBucket: a primary publishes to a real MinIO bucket;
// a replica bootstrapped from the bucket's public URL (a prefix below it)
// serves filters identical to btcd's getcfilter and bulk files identical
// to the primary's, and follows the primary's new blocks; neutrino imports
// the block and filter headers from the bucket's import files and syncs
// the rest over P2P from the replica, and gets the tip's filter and block
// from it (the block through the primary); a flipped byte
// in the bucket's filters object makes a second replica refuse to start,
// naming the object.
func TestReplicaFromMinIOBucket(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(6*time.Minute))
	defer cancel()
	srv := miniotest.Start(t)
	p := startPublishingPrimary(t, ctx, srv, "filters")
	bucketURL := srv.URL("filters") + "/pfx"

	rdir, rhttp, rp2p := t.TempDir(), tcptest.FreeAddr(t), tcptest.FreeAddr(t)
	rbase := "http://" + rhttp
	r := startDaemon(t, replicaArgs(rdir, bucketURL, p.p2p, rhttp, rp2p)...)
	r.waitLog(testtime.Scale(2*time.Minute), msgIs("replica bootstrap: done"))
	waitIndexed(t, rbase, replicaChainHeight, mustHash(t, p.node, replicaChainHeight))
	waitHTTP(t, rbase+"/readyz", 200, `"ready":true`)
	checkServesLikeNode(t, ctx, p.node, rp2p, rbase, p.httpURL, replicaChainHeight)
	if _, err := p.node.Generate(ctx, 2); err != nil {
		t.Fatal(err)
	}
	waitIndexed(t, rbase, replicaChainHeight+2, mustHash(t, p.node, replicaChainHeight+2))
	neutrinoImportsThenSyncs(t, ctx, p, bucketURL, rp2p, replicaChainHeight+2)

	// One flipped byte in the bucket.
	_, _, filters := get(t, bucketURL+"/filters/0", nil)
	bad := layouttest.Flip(filters, len(filters)/3)
	if _, err := srv.Client().PutObject(ctx, "filters", "pfx/filters/0", bytes.NewReader(bad), int64(len(bad)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	r2 := startDaemon(t, replicaArgs(t.TempDir(), bucketURL, p.p2p, tcptest.FreeAddr(t), tcptest.FreeAddr(t))...)
	code, last := r2.wait(testtime.Scale(time.Minute))
	if code != 1 || !strings.Contains(last, "filters/0: sha256 mismatch") {
		t.Fatalf("replica of the damaged bucket: exit code %d, last line %q", code, last)
	}
}

// neutrinoImportsThenSyncs starts neutrino with chainimport reading the
// bucket's import files (lnd's neutrino.blockheaderssource and
// filterheaderssource) and the replica as its only peer: the import ends
// at the published range's end before neutrino connects, and neutrino
// then syncs to the tip from the replica and gets its filters, btcd's.
func neutrinoImportsThenSyncs(t *testing.T, ctx context.Context, p *replicaPrimary, bucketURL, replicaP2P string, tip int32) {
	t.Helper()
	cs, err := lightclient.StartImporting(ctx, t.TempDir(), p.node.Params(), replicaP2P, &neutrino.HeadersImportConfig{
		BlockHeadersSource:  bucketURL + "/headers/import/latest",
		FilterHeadersSource: bucketURL + "/filter-headers/import/latest",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// Filter headers sync over P2P only after the block headers do
	// (getcfcheckpt, getcfheaders): at 1,999 this soon, they came from
	// the import.
	if fh, h, err := cs.RegFilterHeaders.ChainTip(); err != nil || h < 1999 {
		t.Fatalf("neutrino's filter headers at %d (%v) after the import, want the published 1999", h, err)
	} else if want := p.filterHeaderAt(t, ctx, 1999); h == 1999 && *fh != want {
		t.Fatalf("imported filter header 1999 %s, btcd's %s", fh, want)
	}
	deadline := time.Now().Add(testtime.Scale(90 * time.Second))
	for {
		best, err := cs.BestBlock()
		fh, fheight, ferr := cs.RegFilterHeaders.ChainTip()
		if err == nil && ferr == nil && best.Height == tip && fheight == uint32(tip) {
			if want := p.filterHeaderAt(t, ctx, tip); *fh != want {
				t.Fatalf("neutrino's filter header at the tip %s, btcd's %s", fh, want)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("neutrino at block %d, filter header %d; want both at %d", best.Height, fheight, tip)
		}
		time.Sleep(100 * time.Millisecond)
	}
	hash := mustHash(t, p.node, tip)
	f, err := cs.GetCFilter(hash, wire.GCSFilterRegular)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.NBytes()
	if err != nil {
		t.Fatal(err)
	}
	want, err := p.node.CFilter(ctx, hash)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("neutrino's filter of the tip from the replica differs from btcd's (%v)", err)
	}
	// The block a wallet downloads when the filter matches: the replica
	// gets it from its primary.
	blk, err := cs.GetBlock(hash)
	if err != nil {
		t.Fatalf("neutrino's block of the tip from the replica: %v", err)
	}
	wantBlk, err := p.node.Block(ctx, hash)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(blockBytes(t, blk.MsgBlock()), blockBytes(t, wantBlk)) {
		t.Fatal("neutrino's block of the tip from the replica differs from btcd's getblock")
	}
}

// filterHeaderAt is btcd's filter header of the block at height.
func (p *replicaPrimary) filterHeaderAt(t *testing.T, ctx context.Context, height int32) chainhash.Hash {
	t.Helper()
	fh, err := p.node.CFilterHeader(ctx, mustHash(t, p.node, height))
	if err != nil {
		t.Fatal(err)
	}
	return fh
}
