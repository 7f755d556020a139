package bloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// sampleMerkleBlock is a merkleblock proving two of 9 transactions.
func sampleMerkleBlock(t testing.TB) *MerkleBlock {
	rng := rand.New(rand.NewPCG(4, 4))
	txids := randomTxids(rng, 9)
	matched := make([]bool, 9)
	matched[2], matched[8] = true, true
	return &MerkleBlock{
		Header: wire.BlockHeader{Version: 4, PrevBlock: chainhash.Hash{1}, MerkleRoot: merkleRoot(txids), Bits: 0x207fffff, Nonce: 5},
		Tree:   *NewPartialMerkleTree(txids, matched),
	}
}

// Our encoding is wire's and Core's, and wire decodes it to the same
// message.
func TestMerkleBlockEncodingMatchesWire(t *testing.T) {
	mb := sampleMerkleBlock(t)
	var buf bytes.Buffer
	if err := mb.MsgMerkleBlock().BtcEncode(&buf, wire.ProtocolVersion, wire.BaseEncoding); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), mb.Bytes()) {
		t.Fatal("Bytes differs from wire's encoding")
	}
	dec, err := DecodeMerkleBlock(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dec.Bytes(), buf.Bytes()) || dec.Header.BlockHash() != mb.Header.BlockHash() {
		t.Fatal("decode/encode is not the identity")
	}
}

func TestDecodeMerkleBlockRejectsMalformed(t *testing.T) {
	good := sampleMerkleBlock(t).Bytes()
	hashCountAt := wire.MaxBlockHeaderPayload + 4
	nHashes := int(good[hashCountAt])
	flagCountAt := hashCountAt + 1 + nHashes*chainhash.HashSize
	with := func(edit func([]byte) []byte) []byte { return edit(bytes.Clone(good)) }
	for _, tc := range []struct {
		name    string
		payload []byte
	}{
		{"empty", nil},
		{"header only", good[:wire.MaxBlockHeaderPayload]},
		{"truncated hashes", good[:hashCountAt+1+chainhash.HashSize]},
		{"no flag count", good[:flagCountAt]},
		{"flags short", good[:len(good)-1]},
		{"trailing byte", append(bytes.Clone(good), 0)},
		{"hash count past the end", with(func(b []byte) []byte { b[hashCountAt] = 0xfc; return b })},
		{"non-canonical hash count", func() []byte {
			b := append(bytes.Clone(good[:hashCountAt]), 0xfd, byte(nHashes), 0)
			return append(b, good[hashCountAt+1:]...)
		}()},
		{"huge hash count", func() []byte {
			b := append(bytes.Clone(good[:hashCountAt]), 0xff)
			b = binary.LittleEndian.AppendUint64(b, 1<<62)
			return append(b, good[hashCountAt+1:]...)
		}()},
		{"huge flag count", func() []byte {
			b := append(bytes.Clone(good[:flagCountAt]), 0xfe)
			return binary.LittleEndian.AppendUint32(b, 1<<31)
		}()},
	} {
		if _, err := DecodeMerkleBlock(tc.payload); !errors.Is(err, ErrMalformedMerkleBlock) {
			t.Errorf("%s: %v, want ErrMalformedMerkleBlock", tc.name, err)
		}
	}
}

// allocatedBytes is how much fn allocates, averaged over runs.
func allocatedBytes(runs int, fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		fn()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}

// A merkleblock declaring huge counts costs at most a small multiple of
// its own size to reject, and a valid one at most a small multiple of its
// size to decode — unlike wire.MsgMerkleBlock, which allocates for
// 400,001 hashes (≈16 MB) when a peer says so in 9 bytes.
func TestDecodeMerkleBlockAllocationBoundedByPayload(t *testing.T) {
	good := sampleMerkleBlock(t).Bytes()
	hashCountAt := wire.MaxBlockHeaderPayload + 4
	lying := append(bytes.Clone(good[:hashCountAt]), 0xfe, 0x80, 0x1a, 0x06, 0x00) // 400,000 hashes
	lying = append(lying, good[hashCountAt+1:]...)
	for _, tc := range []struct {
		name    string
		payload []byte
		ok      bool
	}{{"valid", good, true}, {"declares 400,000 hashes", lying, false}} {
		var err error
		got := allocatedBytes(50, func() { _, err = DecodeMerkleBlock(tc.payload) })
		if (err == nil) != tc.ok {
			t.Fatalf("%s: err %v", tc.name, err)
		}
		if limit := uint64(4*len(tc.payload) + 1024); got > limit {
			t.Errorf("%s: %d-byte payload allocates %d bytes (limit %d)", tc.name, len(tc.payload), got, limit)
		}
	}
	var wireMsg wire.MsgMerkleBlock
	wireBytes := allocatedBytes(3, func() { _ = wireMsg.BtcDecode(bytes.NewReader(lying), wire.ProtocolVersion, wire.BaseEncoding) })
	t.Logf("declared 400,000 hashes in %d bytes: wire allocates %d bytes, we allocate at most %d", len(lying), wireBytes, 4*len(lying)+1024)
}
