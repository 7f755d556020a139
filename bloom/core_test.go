package bloom

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"
)

// filterloadBytes serializes f as a filterload payload.
func filterloadBytes(t *testing.T, f *Filter) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := f.MsgFilterLoad().BtcEncode(&buf, wire.ProtocolVersion, wire.BaseEncoding); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Core's bloom_create_insert_serialize(_with_tweak): sizing, hashing and
// the filterload serialization byte for byte.
func TestCoreVectorsInsertSerialize(t *testing.T) {
	for _, tc := range []struct {
		tweak uint32
		want  string
	}{
		{0, "03614e9b050000000000000001"},
		{2147483649, "03ce4299050000000100008001"},
	} {
		p, err := ParamsFor(3, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		f := New(p, tc.tweak, wire.BloomUpdateAll)
		in := mustHex(t, "99108ad8ed9bb6274d3980bab5a85c048f0950c8")
		f.Insert(in)
		if !f.Contains(in) {
			t.Fatal("just-inserted element not found")
		}
		if f.Contains(mustHex(t, "19108ad8ed9bb6274d3980bab5a85c048f0950c8")) {
			t.Fatal("element one bit away found")
		}
		f.Insert(mustHex(t, "b5a2c786d9ef4658287ced5914b37a1b4aa32eee"))
		f.Insert(mustHex(t, "b9300670b4c5366e95b2699e8b18bc75e5f729c5"))
		if got := hex.EncodeToString(filterloadBytes(t, f)); got != tc.want {
			t.Errorf("tweak %d: filterload %s, Core %s", tc.tweak, got, tc.want)
		}
	}
	// Core's other sizing vectors: CBloomFilter(10, 0.000001) and (2, 0.001).
	for _, tc := range []struct {
		n         int
		fpr       float64
		size      int
		hashFuncs uint32
	}{{10, 0.000001, 35, 19}, {2, 0.001, 3, 8}, {3, 0.01, 3, 5}} {
		p, err := ParamsFor(tc.n, tc.fpr)
		if err != nil || p.Size != tc.size || p.HashFuncs != tc.hashFuncs {
			t.Errorf("ParamsFor(%d, %v) = %+v, %v; Core %d bytes, k=%d", tc.n, tc.fpr, p, err, tc.size, tc.hashFuncs)
		}
	}
}

// Core's bloom_match: the txid in both byte orders, an input's signature
// and public key pushes, output pubkey hashes (and the spend they make
// match under BLOOM_UPDATE_ALL), the spent outpoint inserted either way,
// and near misses that must not match.
func TestCoreVectorsBloomMatch(t *testing.T) {
	v := loadCoreVectors(t)
	tx := mustTx(t, v.BloomMatchTx)
	spending := mustTx(t, v.BloomMatchSpendingTx)
	txid := tx.TxHash()
	if txid.String() != "b4749f017444b051c44dfd2720e88f314ff94f3dd6d56d40ef65854fcd7fff6b" {
		t.Fatalf("vector tx hashes to %s", txid)
	}
	prev := hashFromStr(t, "90c122d70786e899529d71dbeba91ba216982fb6ba58f3bdaab65e73b7e9260b")
	newFilter := func() *Filter {
		p, _ := ParamsFor(10, 0.000001)
		return New(p, 0, wire.BloomUpdateAll)
	}
	for _, tc := range []struct {
		name   string
		insert func(f *Filter)
		want   bool
	}{
		{"txid", func(f *Filter) { f.Insert(txid[:]) }, true},
		{"txid serialized by hand", func(f *Filter) {
			f.Insert(mustHex(t, "6bff7fcd4f8565ef406dd5d63d4ff94f318fe82027fd4dc451b04474019f74b4"))
		}, true},
		{"input signature", func(f *Filter) {
			f.Insert(mustHex(t, "30450220070aca44506c5cef3a16ed519d7c3c39f8aab192c4e1c90d065f37b8a4af6141022100a8e160b856c2d43d27d8fba71e5aef6405b8643ac4cb7cb3c462aced7f14711a01"))
		}, true},
		{"input public key", func(f *Filter) {
			f.Insert(mustHex(t, "046d11fee51b0e60666d5049a9101a72741df480b96ee26488a4d3466b95c9a40ac5eeef87e10a5cd336c19a84565f80fa6c547957b7700ff4dfbdefe76036c339"))
		}, true},
		{"output address 2", func(f *Filter) { f.Insert(mustHex(t, "a266436d2965547608b9e15d9032a7b9d64fa431")) }, true},
		{"spent outpoint", func(f *Filter) { f.InsertOutPoint(wire.OutPoint{Hash: prev, Index: 0}) }, true},
		{"spent outpoint serialized by hand", func(f *Filter) {
			b := append(append([]byte(nil), prev[:]...), 0, 0, 0, 0)
			f.Insert(b)
		}, true},
		{"random txid", func(f *Filter) {
			h := hashFromStr(t, "00000009e784f32f62ef849763d4f45b98e07ba658647343b915ff832b110436")
			f.Insert(h[:])
		}, false},
		{"random address", func(f *Filter) { f.Insert(mustHex(t, "0000006d2965547608b9e15d9032a7b9d64fa431")) }, false},
		{"other output of the spent tx", func(f *Filter) { f.InsertOutPoint(wire.OutPoint{Hash: prev, Index: 1}) }, false},
		{"other spent txid", func(f *Filter) {
			f.InsertOutPoint(wire.OutPoint{Hash: hashFromStr(t, "000000d70786e899529d71dbeba91ba216982fb6ba58f3bdaab65e73b7e9260b"), Index: 0})
		}, false},
	} {
		f := newFilter()
		tc.insert(f)
		if got := f.MatchTxAndUpdate(tx, &txid); got != tc.want {
			t.Errorf("%s: match %v, want %v", tc.name, got, tc.want)
		}
	}
	// Output address 1 matches, and BLOOM_UPDATE_ALL makes the
	// transaction spending that output match too.
	f := newFilter()
	f.Insert(mustHex(t, "04943fdd508053c75000106d3bc6e2754dbcff19"))
	if !f.MatchTxAndUpdate(tx, &txid) {
		t.Fatal("output address 1 did not match")
	}
	spendID := spending.TxHash()
	if !f.MatchTxAndUpdate(spending, &spendID) {
		t.Fatal("BLOOM_UPDATE_ALL did not add the matched output")
	}
}

// Core's merkle_block_3_and_serialize: a one-transaction block's
// merkleblock, byte for byte.
func TestCoreVectorsMerkleBlockSerialize(t *testing.T) {
	v := loadCoreVectors(t)
	blk := mustBlock(t, mustHex(t, v.MerkleBlock3))
	p, _ := ParamsFor(10, 0.000001)
	f := New(p, 0, wire.BloomUpdateAll)
	h := hashFromStr(t, "63194f18be0af63f2c6bc9dc0f777cbefed3d9415c4af83f3ee3a3d669c00cb5")
	f.Insert(h[:])
	fb := FilterBlock(blk, nil, f)
	if len(fb.Matched) != 1 || fb.Matched[0] != 0 {
		t.Fatalf("matched %v, want [0]", fb.Matched)
	}
	if got := hex.EncodeToString(fb.MerkleBlock.Bytes()); got != v.MerkleBlock3Bytes {
		t.Fatalf("merkleblock\n %s\nCore\n %s", got, v.MerkleBlock3Bytes)
	}
	matches, err := fb.MerkleBlock.Verify()
	if err != nil || len(matches) != 1 || matches[0].Txid != h {
		t.Fatalf("Verify: %v %v", matches, err)
	}
}

// Core's merkle_block_4_test_p2pubkey_only and _update_none: matching the
// coinbase's public key adds the coinbase outpoint under P2PUBKEY_ONLY
// (a pay-to-pubkey output) but matching the 4th transaction's pubkey hash
// does not add its (P2PKH) outpoint; UPDATE_NONE adds neither; UPDATE_ALL
// adds both.
func TestCoreVectorsUpdateModes(t *testing.T) {
	v := loadCoreVectors(t)
	blk := mustBlock(t, mustHex(t, v.MerkleBlock4))
	coinbaseOut := wire.OutPoint{Hash: hashFromStr(t, "147caa76786596590baa4e98f5d9f48b86c7765e489f7a6ff3360fe5c674360b")}
	fourthOut := wire.OutPoint{Hash: hashFromStr(t, "02981fa052f0481dbc5868f4fc2166035a10f27a03cfd2de67326471df5bc041")}
	for _, tc := range []struct {
		mode                  wire.BloomUpdateType
		wantCoinbase, want4th bool
	}{
		{wire.BloomUpdateP2PubkeyOnly, true, false},
		{wire.BloomUpdateNone, false, false},
		{wire.BloomUpdateAll, true, true},
	} {
		p, _ := ParamsFor(10, 0.000001)
		f := New(p, 0, tc.mode)
		f.Insert(mustHex(t, "04eaafc2314def4ca98ac970241bcab022b9c1e1f4ea423a20f134c876f2c01ec0f0dd5b2e86e7168cefe0d81113c3807420ce13ad1357231a2252247d97a46a91"))
		f.Insert(mustHex(t, "b6efd80d99179f4f4ff6f4dd0a007d018c385d21"))
		fb := FilterBlock(blk, nil, f)
		if len(fb.Matched) < 2 {
			t.Errorf("mode %v: matched %v", tc.mode, fb.Matched)
		}
		if got := f.ContainsOutPoint(coinbaseOut); got != tc.wantCoinbase {
			t.Errorf("mode %v: coinbase outpoint in filter %v, want %v", tc.mode, got, tc.wantCoinbase)
		}
		if got := f.ContainsOutPoint(fourthOut); got != tc.want4th {
			t.Errorf("mode %v: 4th tx outpoint in filter %v, want %v", tc.mode, got, tc.want4th)
		}
		if _, err := fb.MerkleBlock.Verify(); err != nil {
			t.Errorf("mode %v: %v", tc.mode, err)
		}
	}
}
