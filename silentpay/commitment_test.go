package silentpay

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
)

var update = flag.Bool("update", false, "rewrite testdata/silentpay/commitment_vectors.json from the generator")

var commitmentVectorsPath = filepath.Join("..", "testdata", "silentpay", "commitment_vectors.json")

// commitmentVector is one block of the chain in
// testdata/silentpay/commitment_vectors.json; docs/silent-payments.md
// describes every field.
type commitmentVector struct {
	Comment     string   `json:"comment"`
	Block       string   `json:"block"`
	PrevScripts []string `json:"prev_scripts"`
	BlockHash   string   `json:"block_hash"`
	TweakData   string   `json:"tweak_data"`
	Filter      string   `json:"taproot_filter"`
	TweakHash   string   `json:"tweak_hash"`
	FilterHash  string   `json:"filter_hash"`
	Commitment  string   `json:"commitment_hash"`
	PrevHeader  string   `json:"prev_header"`
	Header      string   `json:"header"`
}

// generateCommitmentVectors builds a chain of four generated blocks (fixed
// seed): one with many transactions, one with only a coinbase, and two
// more, chained from the zero hash.
func generateCommitmentVectors(t *testing.T) []commitmentVector {
	g := newTxGen(352)
	var bb BlockBuilder
	var out []commitmentVector
	prevHeader, prevBlock := chainhash.Hash{}, chainhash.Hash{}
	for i, n := range []int{24, 0, 3, 8} {
		msg, prev := g.block(n, prevBlock)
		raw := serializeBlock(t, msg)
		blk, err := bb.Build(raw, prev)
		if err != nil {
			t.Fatal(err)
		}
		c := blk.Commitment()
		header := c.Header(prevHeader)
		v := commitmentVector{
			Comment:    []string{"first block of the chain: prev_header is zero", "coinbase only: no tweaks, empty filter", "a few transactions", "more transactions"}[i],
			Block:      hex.EncodeToString(raw),
			BlockHash:  blk.Hash.String(),
			TweakData:  hex.EncodeToString(AppendTweakData(nil, blk.Tweaks)),
			Filter:     hex.EncodeToString(blk.Filter),
			TweakHash:  c.TweakHash.String(),
			FilterHash: c.FilterHash.String(),
			Commitment: c.Hash().String(),
			PrevHeader: prevHeader.String(),
			Header:     header.String(),
		}
		for _, p := range prev {
			v.PrevScripts = append(v.PrevScripts, hex.EncodeToString(p))
		}
		out = append(out, v)
		prevHeader, prevBlock = header, blk.Hash
	}
	return out
}

// dsha is double SHA-256 written out, independent of the package.
func dsha(b []byte) []byte {
	h := sha256.Sum256(b)
	h = sha256.Sum256(h[:])
	return h[:]
}

// display is a hash as Bitcoin prints it (byte-reversed hex).
func display(h []byte) string {
	r := bytes.Clone(h)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return hex.EncodeToString(r)
}

// TestCommitmentVectorsRecompute reads the pinned vectors, rebuilds every
// block's tweak data, filter and hashes from its bytes and spent scripts,
// and recomputes the header chain twice: with the package, and with
// SHA-256 written out as docs/silent-payments.md states it.
func TestCommitmentVectorsRecompute(t *testing.T) {
	if *update {
		data, err := json.MarshalIndent(generateCommitmentVectors(t), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(commitmentVectorsPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(commitmentVectorsPath, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(commitmentVectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	var vectors []commitmentVector
	if err := json.Unmarshal(raw, &vectors); err != nil {
		t.Fatal(err)
	}
	if len(vectors) != 4 {
		t.Fatalf("%d vectors, want 4", len(vectors))
	}
	var bb BlockBuilder
	prev := make([]byte, 32)
	for i, v := range vectors {
		var scripts [][]byte
		for _, s := range v.PrevScripts {
			scripts = append(scripts, mustHex(t, s))
		}
		blk, err := bb.Build(mustHex(t, v.Block), scripts)
		if err != nil {
			t.Fatalf("vector %d: %v", i, err)
		}
		c := blk.Commitment()
		got := []string{blk.Hash.String(), hex.EncodeToString(AppendTweakData(nil, blk.Tweaks)), hex.EncodeToString(blk.Filter),
			c.TweakHash.String(), c.FilterHash.String(), c.Hash().String()}
		want := []string{v.BlockHash, v.TweakData, v.Filter, v.TweakHash, v.FilterHash, v.Commitment}
		for j := range got {
			if got[j] != want[j] {
				t.Fatalf("vector %d field %d: %s, want %s", i, j, got[j], want[j])
			}
		}
		// By hand: header = dSHA256(dSHA256(dSHA256(tweak data) ||
		// dSHA256(filter)) || prev header), hashes in internal byte order.
		inner := dsha(append(dsha(mustHex(t, v.TweakData)), dsha(mustHex(t, v.Filter))...))
		if display(prev) != v.PrevHeader {
			t.Fatalf("vector %d: prev_header %s, the chain says %s", i, v.PrevHeader, display(prev))
		}
		header := dsha(append(inner, prev...))
		if display(header) != v.Header {
			t.Fatalf("vector %d: header by hand %s, vector %s", i, display(header), v.Header)
		}
		prevHash, _ := chainhash.NewHashFromStr(v.PrevHeader)
		if h := c.Header(*prevHash); h.String() != v.Header {
			t.Fatalf("vector %d: Header %s, vector %s", i, h, v.Header)
		}
		prev = header
	}
	if vectors[1].TweakData != "00" || vectors[1].Filter != "00" {
		t.Fatalf("the coinbase-only block has tweak data %s and filter %s, want 00 and 00", vectors[1].TweakData, vectors[1].Filter)
	}
}

func TestTweakDataRoundTripsAndRejectsNonCanonical(t *testing.T) {
	tw := []TxTweak{{TxIndex: 1, Tweak: Tweak{Point: [33]byte{2, 1}, MaxTaprootValue: 546}}, {TxIndex: 300, Tweak: Tweak{Point: [33]byte{3, 9}, MaxTaprootValue: 1 << 40}}}
	good := AppendTweakData(nil, tw)
	if n := TweakDataSize(tw); n != len(good) {
		t.Fatalf("TweakDataSize %d, AppendTweakData wrote %d bytes", n, len(good))
	}
	if n := TweakDataSize(nil); n != 1 {
		t.Fatalf("TweakDataSize of no tweaks %d, want 1 (the count)", n)
	}
	back, err := ParseTweakData(good)
	if err != nil || len(back) != 2 || back[0] != tw[0] || back[1] != tw[1] {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	rec := func(idx []byte, prefix byte) []byte {
		r := append(bytes.Clone(idx), prefix)
		return append(r, make([]byte, 32+8)...)
	}
	cases := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"count beyond the bytes", []byte{0xfe, 0xff, 0xff, 0xff, 0x7f}},
		{"truncated record", good[:len(good)-1]},
		{"trailing byte", append(bytes.Clone(good), 0)},
		{"coinbase index", append([]byte{1}, rec([]byte{0}, 2)...)},
		{"indexes not increasing", append(append([]byte{2}, rec([]byte{5}, 2)...), rec([]byte{5}, 3)...)},
		{"non-canonical index", append([]byte{1}, rec([]byte{0xfd, 5, 0}, 2)...)},
		{"bad point prefix", append([]byte{1}, rec([]byte{1}, 4)...)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ParseTweakData(c.data); !errors.Is(err, ErrMalformedTweakData) {
				t.Fatalf("error %v, want ErrMalformedTweakData", err)
			}
		})
	}
	if empty, err := ParseTweakData([]byte{0}); err != nil || len(empty) != 0 {
		t.Fatalf("no tweaks: %v, %v", empty, err)
	}
}
