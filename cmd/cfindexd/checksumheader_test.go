package main

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
)

// Block headers TestChecksumFaultsNeverServed damages: the header itself
// at 44 and 112, the block hash beside it at 77.
var blockHeaderFaults = []struct {
	height uint32
	at     int // offset in the headers value: hash[32] header[80] crc[4]
}{{44, 32 + 40}, {77, 5}, {112, 32 + 77}}

// flipBlockHeaders damages the stored headers values of blockHeaderFaults
// in the closed store at path and returns their heights.
func flipBlockHeaders(t *testing.T, path string) []uint32 {
	t.Helper()
	var hs []uint32
	for _, f := range blockHeaderFaults {
		flipStored(t, path, storedValue(t, path, "headers", f.height), f.at)
		hs = append(hs, f.height)
	}
	return hs
}

// reorgTop replaces the top two of the node's blocks (height tip) with a
// branch of three, lets the daemon follow it, and returns the old tip,
// now a block of the store's stale set.
func reorgTop(ctx context.Context, t *testing.T, node *btcdtest.Node, tip int32, args []string) chainhash.Hash {
	t.Helper()
	old, first := mustHash(t, node, tip), mustHash(t, node, tip-1)
	if err := node.InvalidateBlock(ctx, first); err != nil {
		t.Fatal(err)
	}
	if _, err := node.Generate(ctx, 3); err != nil {
		t.Fatal(err)
	}
	indexChain(t, tip+1, args...)
	return old
}

// storedStale returns the stale value of hash in the closed store at path.
func storedStale(t *testing.T, path string, hash chainhash.Hash) []byte {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []byte
	_ = db.View(func(tx *bolt.Tx) error {
		out = bytes.Clone(tx.Bucket([]byte("stale")).Get(hash[:]))
		return nil
	})
	if out == nil {
		t.Fatalf("no stale value for %s", hash)
	}
	return out
}

// btcdHeaders returns the serialized headers of the node's blocks at
// heights from..to.
func btcdHeaders(ctx context.Context, t *testing.T, node *btcdtest.Node, from, to uint32) []byte {
	t.Helper()
	var buf bytes.Buffer
	for h := from; h <= to; h++ {
		hdr, _, err := node.BlockHeader(ctx, mustHash(t, node, int32(h)))
		if err != nil {
			t.Fatal(err)
		}
		if err := hdr.Serialize(&buf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// serialized is hs in wire form.
func serialized(t *testing.T, hs []wire.BlockHeader) []byte {
	t.Helper()
	var buf bytes.Buffer
	for i := range hs {
		if err := hs[i].Serialize(&buf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// checkHeadersNotServed reads each damaged block header first over a
// channel of its own, before the repair the read sets off can end: 44 by
// P2P getheaders and 77 by REST headers, which stop before the damaged
// block, 112 by the bulk headers file, which is cut. Then the other reads
// of each (REST block hash by height and filter by hash) are either not
// found or, once repaired, btcd's bytes: never a wrong byte.
func checkHeadersNotServed(ctx context.Context, t *testing.T, node *btcdtest.Node, base, p2pAddr string) {
	t.Helper()
	hashOf := func(h uint32) chainhash.Hash { return mustHash(t, node, int32(h)) }
	hs, err := dialP2P(t, p2pAddr, node.Params()).GetHeaders(ctx, []chainhash.Hash{hashOf(40)}, chainhash.Hash{})
	if err != nil {
		t.Fatalf("getheaders from 40: %v", err)
	}
	if got, want := serialized(t, hs), btcdHeaders(ctx, t, node, 41, 43); !bytes.Equal(got, want) {
		t.Fatalf("getheaders from 40 over the damaged header at 44: %d headers, want btcd's 41..43", len(hs))
	}
	st, _, body := get(t, fmt.Sprintf("%s/rest/headers/%s.bin?count=10", base, hashOf(73)), nil)
	if want := btcdHeaders(ctx, t, node, 73, 76); st != 200 || !bytes.Equal(body, want) {
		t.Fatalf("REST headers from 73 over the damaged block hash at 77: %d, %d bytes, want btcd's 73..76", st, len(body))
	}
	if st, body := getLoose(base + "/bulk/headers/0-121.bin"); st == 200 && len(body) == 80*122 {
		t.Fatal("bulk headers served the damaged header at 112 whole")
	}
	for _, f := range blockHeaderFaults {
		hash := hashOf(f.height)
		st, _, body := get(t, fmt.Sprintf("%s/rest/blockhashbyheight/%d.bin", base, f.height), nil)
		if st != 404 && (st != 200 || !bytes.Equal(body, hash[:])) {
			t.Fatalf("REST block hash at damaged height %d: %d %x", f.height, st, body)
		}
		want, _, err := node.FilterOf(ctx, hash)
		if err != nil {
			t.Fatal(err)
		}
		st, _, body = get(t, base+"/rest/blockfilter/basic/"+hash.String()+".bin", nil)
		if st != 404 && (st != 200 || !bytes.Equal(body, coreBlockFilter(hash, want))) {
			t.Fatalf("REST filter of the block with a damaged header at %d: %d", f.height, st)
		}
	}
}

// checkHeadersRepaired checks that every channel serves btcd's headers
// once the damaged ones are repaired.
func checkHeadersRepaired(ctx context.Context, t *testing.T, node *btcdtest.Node, base, p2pAddr string) {
	t.Helper()
	hs, err := dialP2P(t, p2pAddr, node.Params()).GetHeaders(ctx, []chainhash.Hash{mustHash(t, node, 0)}, chainhash.Hash{})
	if err != nil {
		t.Fatal(err)
	}
	want := btcdHeaders(ctx, t, node, 0, 121)
	if !bytes.Equal(serialized(t, hs), want[80:]) {
		t.Fatalf("getheaders after the repair: %d headers, not btcd's", len(hs))
	}
	st, _, body := get(t, base+"/bulk/headers/0-121.bin", nil)
	if st != 200 || !bytes.Equal(body, want) {
		t.Fatalf("bulk headers after the repair: %d, %d bytes", st, len(body))
	}
	for _, f := range blockHeaderFaults {
		st, _, body := get(t, fmt.Sprintf("%s/rest/blockhashbyheight/%d.bin", base, f.height), nil)
		if hash := mustHash(t, node, int32(f.height)); st != 200 || !bytes.Equal(body, hash[:]) {
			t.Fatalf("REST block hash at repaired height %d: %d", f.height, st)
		}
	}
}
