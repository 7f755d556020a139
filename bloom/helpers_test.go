package bloom

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// coreVectors are Bitcoin Core's BIP-37 unit-test vectors (mainnet
// transactions and blocks), in testdata/bip37.
type coreVectors struct {
	BloomMatchTx         string `json:"bloom_match_tx"`
	BloomMatchSpendingTx string `json:"bloom_match_spending_tx"`
	MerkleBlock3         string `json:"merkle_block_3"`
	MerkleBlock3Bytes    string `json:"merkle_block_3_serialized"`
	MerkleBlock4         string `json:"merkle_block_4"`
}

func loadCoreVectors(tb testing.TB) coreVectors {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "bip37", "core-bloom-vectors.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var v coreVectors
	if err := json.Unmarshal(raw, &v); err != nil {
		tb.Fatal(err)
	}
	return v
}

func mustHex(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		tb.Fatalf("hex %q: %v", s, err)
	}
	return b
}

func mustTx(tb testing.TB, s string) *wire.MsgTx {
	tb.Helper()
	var tx wire.MsgTx
	r := bytes.NewReader(mustHex(tb, s))
	if err := tx.Deserialize(r); err != nil || r.Len() != 0 {
		tb.Fatalf("decode tx: %v (%d bytes left)", err, r.Len())
	}
	return &tx
}

func mustBlock(tb testing.TB, raw []byte) *wire.MsgBlock {
	tb.Helper()
	var blk wire.MsgBlock
	r := bytes.NewReader(raw)
	if err := blk.Deserialize(r); err != nil || r.Len() != 0 {
		tb.Fatalf("decode block: %v (%d bytes left)", err, r.Len())
	}
	return &blk
}

// hashFromStr parses a hash in display (reversed) order.
func hashFromStr(tb testing.TB, s string) chainhash.Hash {
	tb.Helper()
	h, err := chainhash.NewHashFromStr(s)
	if err != nil {
		tb.Fatal(err)
	}
	return *h
}
