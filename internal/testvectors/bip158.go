package testvectors

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// BIP158 is one row of the official BIP-158 test vectors. Hashes and
// headers are in internal byte order (the file prints them reversed).
type BIP158 struct {
	Height    uint32
	BlockHash chainhash.Hash
	// Raw is the serialized block; Block the same decoded.
	Raw   []byte
	Block *wire.MsgBlock
	// PrevScripts are the scripts the block's inputs spend, in the order
	// BIP-158 lists them.
	PrevScripts [][]byte
	PrevHeader  chainhash.Hash
	// Filter is the basic filter in wire form (N prefix included).
	Filter []byte
	Header chainhash.Hash
	Notes  string
}

// bip158Rows is how many vectors the file holds.
const bip158Rows = 10

// bip158Path is testdata/bip158/testnet-19.json at the module's root.
func bip158Path() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "bip158", "testnet-19.json")
}

// LoadBIP158 parses every vector, checking that each block hashes to its
// listed hash.
func LoadBIP158(tb testing.TB) []BIP158 {
	tb.Helper()
	raw, err := os.ReadFile(bip158Path())
	if err != nil {
		tb.Fatalf("read BIP-158 vectors: %v", err)
	}
	var rows [][]json.RawMessage
	if err := json.Unmarshal(raw, &rows); err != nil {
		tb.Fatalf("parse BIP-158 vectors: %v", err)
	}
	var out []BIP158
	for i, fields := range rows {
		if len(fields) == 1 { // column titles
			continue
		}
		if len(fields) != 8 {
			tb.Fatalf("BIP-158 row %d: %d fields, want 8", i, len(fields))
		}
		var (
			v                                        BIP158
			hash, block, prevHdr, filter, hdr, notes string
			prevScripts                              []string
		)
		for j, dst := range []any{&v.Height, &hash, &block, &prevScripts, &prevHdr, &filter, &hdr, &notes} {
			if err := json.Unmarshal(fields[j], dst); err != nil {
				tb.Fatalf("BIP-158 row %d field %d: %v", i, j, err)
			}
		}
		v.Notes = notes
		v.BlockHash = hashFromStr(tb, hash)
		v.PrevHeader = hashFromStr(tb, prevHdr)
		v.Header = hashFromStr(tb, hdr)
		v.Filter = fromHex(tb, filter)
		v.Raw = fromHex(tb, block)
		v.Block = new(wire.MsgBlock)
		r := bytes.NewReader(v.Raw)
		if err := v.Block.Deserialize(r); err != nil || r.Len() != 0 {
			tb.Fatalf("BIP-158 height %d: decode block: %v (%d bytes left)", v.Height, err, r.Len())
		}
		if got := v.Block.BlockHash(); got != v.BlockHash {
			tb.Fatalf("BIP-158 height %d: block hashes to %s, vector says %s", v.Height, got, v.BlockHash)
		}
		for _, s := range prevScripts {
			v.PrevScripts = append(v.PrevScripts, fromHex(tb, s))
		}
		out = append(out, v)
	}
	if len(out) != bip158Rows {
		tb.Fatalf("%d BIP-158 vectors, want %d", len(out), bip158Rows)
	}
	return out
}

func fromHex(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		tb.Fatalf("hex %q: %v", s, err)
	}
	return b
}

// hashFromStr parses a hash printed in display (reversed) order.
func hashFromStr(tb testing.TB, s string) chainhash.Hash {
	tb.Helper()
	h, err := chainhash.NewHashFromStr(s)
	if err != nil {
		tb.Fatalf("hash %q: %v", s, err)
	}
	return *h
}
