package indexer

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// bip158Vector is one row of the official BIP-158 test vectors
// (../testdata/bip158/testnet-19.json, testnet3 blocks, P=19).
type bip158Vector struct {
	Height      uint32
	BlockHash   chainhash.Hash
	Block       *wire.MsgBlock
	PrevScripts [][]byte
	PrevHeader  chainhash.Hash
	Filter      []byte // wire form, N prefix included
	Header      chainhash.Hash
	Notes       string
}

// loadBIP158Vectors parses every vector row. The file prints hashes and
// headers in display (reversed) order, which chainhash.NewHashFromStr undoes.
func loadBIP158Vectors(tb testing.TB) []bip158Vector {
	tb.Helper()
	raw, err := os.ReadFile("../testdata/bip158/testnet-19.json")
	if err != nil {
		tb.Fatalf("read BIP-158 vectors: %v", err)
	}
	var rows []json.RawMessage
	if err := json.Unmarshal(raw, &rows); err != nil {
		tb.Fatalf("parse BIP-158 vectors: %v", err)
	}
	var out []bip158Vector
	for i, r := range rows {
		var fields []json.RawMessage
		if err := json.Unmarshal(r, &fields); err != nil {
			tb.Fatalf("row %d: %v", i, err)
		}
		if len(fields) == 1 { // column titles
			continue
		}
		var (
			v                                        bip158Vector
			hash, block, prevHdr, filter, hdr, notes string
			prevScripts                              []string
		)
		if len(fields) != 8 {
			tb.Fatalf("row %d: %d fields, want 8", i, len(fields))
		}
		for j, dst := range []any{&v.Height, &hash, &block, &prevScripts, &prevHdr, &filter, &hdr, &notes} {
			if err := json.Unmarshal(fields[j], dst); err != nil {
				tb.Fatalf("row %d field %d: %v", i, j, err)
			}
		}
		v.Notes = notes
		v.BlockHash = mustHashFromStr(tb, hash)
		v.PrevHeader = mustHashFromStr(tb, prevHdr)
		v.Header = mustHashFromStr(tb, hdr)
		v.Filter = mustHex(tb, filter)
		v.Block = new(wire.MsgBlock)
		if err := v.Block.Deserialize(bytes.NewReader(mustHex(tb, block))); err != nil {
			tb.Fatalf("row %d (height %d): decode block: %v", i, v.Height, err)
		}
		if got := v.Block.BlockHash(); got != v.BlockHash {
			tb.Fatalf("height %d: block hashes to %s, vector says %s", v.Height, got, v.BlockHash)
		}
		for _, s := range prevScripts {
			v.PrevScripts = append(v.PrevScripts, mustHex(tb, s))
		}
		out = append(out, v)
	}
	return out
}

func mustHex(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		tb.Fatalf("hex %q: %v", s, err)
	}
	return b
}

func mustHashFromStr(tb testing.TB, s string) chainhash.Hash {
	tb.Helper()
	h, err := chainhash.NewHashFromStr(s)
	if err != nil {
		tb.Fatalf("hash %q: %v", s, err)
	}
	return *h
}
