package store

import (
	"errors"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	bolt "go.etcd.io/bbolt"
)

// Every read that would return a damaged block header or block hash fails
// with the height instead, over every path an answer takes (getheaders,
// REST, getcfilters' block hashes, a record); ChainedHashAt still names
// the block, and Repair with the node's header makes the height whole
// again and refuses a header that is not the chain's.
func TestCheckedHeadersAndRepair(t *testing.T) {
	chain := genChain(47, nil, 40)
	s, path := openTest(t, chain[0].Hash)
	commitAll(t, s, chain, 9)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	faults := []struct {
		h    uint32
		what string
		at   int
	}{
		{9, "header", hashLen + 10},
		{15, "block hash", 3},
		{0, "genesis header", hashLen + 70},
		{39, "tip header", hashLen},
		{22, "crc", headerValueLenV3 + 1},
	}
	for _, f := range faults {
		flipInFile(t, path, headerValue(f.h, chain[f.h].Hash, &chain[f.h].Header), f.at)
	}
	var log mismatchLog
	s, err := Open(path, chain[0].Hash, Options{NoSync: true, Timeout: 2 * time.Second, OnMismatch: log.add})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tip := chain[len(chain)-1]
	for _, f := range faults {
		h, what := f.h, f.what
		_, err := s.HeaderAt(h)
		wantMismatch(t, what+": HeaderAt", err, h)
		_, err = s.HashAt(h)
		wantMismatch(t, what+": HashAt", err, h)
		_, err = s.Headers(h, h)
		wantMismatch(t, what+": Headers", err, h)
		_, err = s.Headers(0, tip.Height)
		wantMismatch(t, what+": Headers from 0", err, 0)
		_, _, err = s.HeaderByHash(chain[h].Hash)
		wantMismatch(t, what+": HeaderByHash", err, h)
		_, err = s.FiltersByHeight(h, h)
		wantMismatch(t, what+": FiltersByHeight", err, h)
		_, _, err = s.FilterByHash(chain[h].Hash)
		wantMismatch(t, what+": FilterByHash", err, h)
		stop := chain[38].Hash // intact, above the fault
		if h >= 38 {
			stop = chain[h].Hash
		}
		_, err = s.BlockHashesForStop(stop, h)
		wantMismatch(t, what+": BlockHashesForStop", err, h)
		if got, err := s.ChainedHashAt(h); err != nil || got != chain[h].Hash {
			t.Fatalf("%s: ChainedHashAt(%d) = %s, %v", what, h, got, err)
		}
	}
	if len(log.seen) == 0 {
		t.Fatal("OnMismatch never called")
	}
	if _, err := s.Headers(1, 8); err != nil {
		t.Fatalf("the heights between the faults: %v", err)
	}
	wantErr(t, "repair with another block's header", s.Repair(9, chain[10].Header, chain[9].Filter), ErrNotFound)
	other := chain[9].Header
	other.Nonce++
	wantErr(t, "repair with a header not the chain's", s.Repair(9, other, chain[9].Filter), ErrNotFound)
	for _, f := range faults {
		if err := s.Repair(f.h, chain[f.h].Header, chain[f.h].Filter); err != nil {
			t.Fatalf("repair %s at %d: %v", f.what, f.h, err)
		}
	}
	hs, err := s.Headers(0, tip.Height)
	if err != nil {
		t.Fatal(err)
	}
	for i := range hs {
		if hs[i] != chain[i].Header {
			t.Fatalf("header %d after the repair differs", i)
		}
	}
	if got, err := s.BlockHashesForStop(tip.Hash, 0); err != nil || len(got) != len(chain) || got[15] != chain[15].Hash {
		t.Fatalf("block hashes after the repair: %d, %v", len(got), err)
	}
}

// A heights value (block hash -> height) that names another height is
// not trusted: the locator, getcfilters and REST reads that look a hash up
// fail with a HeightIndex mismatch, and RepairHeightIndex points it back.
func TestCheckedHeightIndex(t *testing.T) {
	chain := genChain(48, nil, 30)
	s, path := openTest(t, chain[0].Hash)
	commitAll(t, s, chain, 30)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketHeights).Put(chain[12].Hash[:], heightKey(13))
	})
	if err2 := db.Close(); err != nil || err2 != nil {
		t.Fatal(err, err2)
	}
	s, err = Open(path, chain[0].Hash, Options{NoSync: true, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, _, err = s.HeightOf(chain[12].Hash)
	m, ok := AsMismatch(err)
	if !ok || !m.HeightIndex || m.Hash != chain[12].Hash {
		t.Fatalf("HeightOf over a damaged index: %v", err)
	}
	if _, err := s.BlockHashesForStop(chain[12].Hash, 0); !errors.Is(err, ErrChecksumMismatch) {
		t.Fatalf("getcfilters stop over a damaged index: %v", err)
	}
	if err := s.RepairHeightIndex(chain[12].Hash); err != nil {
		t.Fatal(err)
	}
	if h, active, err := s.HeightOf(chain[12].Hash); err != nil || !active || h != 12 {
		t.Fatalf("HeightOf after the repair: %d %v %v", h, active, err)
	}
	unknown := chainhash.Hash{7}
	if err := s.RepairHeightIndex(unknown); err != nil {
		t.Fatalf("repairing the index of an unknown block: %v", err)
	}
}

// A schema-3 store upgrades to checked headers: served throughout (each
// header checked against its hash until the backfill passes it), a header
// that does not hash to its hash is never served nor given a CRC, and
// the other values keep theirs.
func TestUpgradeFromSchema3(t *testing.T) {
	chain := genChain(49, nil, 300)
	s, path := openTest(t, chain[0].Hash)
	commitAll(t, s, chain, 50)
	if _, err := s.Reorg(290, genChain(50, &chain[290], 3)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	downgradeToV3(t, path)
	const damaged = 120
	v3 := headerValue(damaged, chain[damaged].Hash, &chain[damaged].Header)[:headerValueLenV3]
	flipInFile(t, path, v3, hashLen+20)
	s, err := Open(path, chain[0].Hash, Options{NoSync: true, Timeout: 2 * time.Second, holdBackfill: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Headers(0, 119); err != nil {
		t.Fatalf("before the backfill: %v", err)
	}
	_, err = s.Headers(0, 290)
	wantMismatch(t, "damaged header before the backfill", err, damaged)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if v := schemaVersionOf(t, path); v != SchemaVersion {
		t.Fatalf("schema %d after the upgrade", v)
	}
	s, err = Open(path, chain[0].Hash, Options{NoSync: true, Timeout: 2 * time.Second, backfillBatchHeights: 40})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.FiltersByHeight(0, 119); err != nil {
		t.Fatal(err)
	} else {
		checkRecords(t, "during the backfill", got, chain[:120])
	}
	waitBackfill(t, s)
	got, err := s.FiltersByHeight(121, 290)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, "after the backfill", got, chain[121:291])
	_, err = s.HeaderAt(damaged)
	wantMismatch(t, "damaged header after the backfill", err, damaged)
	if err := s.Repair(damaged, chain[damaged].Header, chain[damaged].Filter); err != nil {
		t.Fatal(err)
	}
	if hdr, err := s.HeaderAt(damaged); err != nil || hdr != chain[damaged].Header {
		t.Fatalf("repaired header: %v", err)
	}
	checkChecksums(t, s)
	if _, _, err := s.FilterByHash(chain[295].Hash); err != nil {
		t.Fatalf("stale block after the upgrade: %v", err)
	}
}
