package httpapi

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/gcs"
	"github.com/cfindexd/cfindexd/headers"
)

// Regtest genesis filter and filter header as Core v31 reported them
// (rpc/heights-0000-0094.hash-and-getblockfilter.json, height 0).
const (
	regtestGenesisFilter       = "014756c0"
	regtestGenesisFilterHeader = "485e301e4509d7f0d954bf5b529f3ecef68c5191fd0e635f775c1d0266dc5a2b"
	regtestBits                = 0x207fffff
)

// genesisRecord is the regtest genesis block as the store holds it.
func genesisRecord(tb testing.TB) BlockRecord {
	tb.Helper()
	p := chaincfg.RegressionNetParams
	f := mustHex(tb, regtestGenesisFilter)
	fh := headers.FilterHeader(f, chainhash.Hash{})
	if fh != mustHash(tb, regtestGenesisFilterHeader) {
		tb.Fatalf("genesis filter header %s", fh)
	}
	return BlockRecord{Height: 0, Hash: *p.GenesisHash, Header: p.GenesisBlock.Header, Filter: f, FilterHeader: fh}
}

// mineRegtest finds a nonce that meets regtest's proof of work (about two
// tries on average).
func mineRegtest(h *wire.BlockHeader) {
	// Target 0x7fffff << 8*29: big-endian 7f ff ff 00...00.
	var target [32]byte
	target[0], target[1], target[2] = 0x7f, 0xff, 0xff
	for {
		hash := h.BlockHash()
		var be [32]byte
		for i := range hash {
			be[i] = hash[31-i]
		}
		if bytes.Compare(be[:], target[:]) <= 0 {
			return
		}
		h.Nonce++
	}
}

// extendChain appends n blocks on top of base (which must end with the
// block to build on): mined regtest headers ten minutes apart and real
// BIP-158 filters of a few pseudo-random scripts drawn from seed.
func extendChain(tb testing.TB, base []BlockRecord, n int, seed uint64) []BlockRecord {
	tb.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := append([]BlockRecord(nil), base...)
	for range n {
		prev := out[len(out)-1]
		var root chainhash.Hash
		binary.LittleEndian.PutUint64(root[:], rng.Uint64())
		binary.LittleEndian.PutUint64(root[8:], seed)
		hdr := wire.BlockHeader{
			Version:    0x20000000,
			PrevBlock:  prev.Hash,
			MerkleRoot: root,
			Timestamp:  prev.Header.Timestamp.Add(10 * time.Minute),
			Bits:       regtestBits,
		}
		mineRegtest(&hdr)
		hash := hdr.BlockHash()
		elems := make([][]byte, 1+rng.IntN(20))
		for i := range elems {
			e := make([]byte, 22)
			e[0], e[1] = 0x00, 0x14
			for j := 2; j < len(e); j++ {
				e[j] = byte(rng.Uint32())
			}
			elems[i] = e
		}
		f := gcs.BuildBasic(hash, elems)
		out = append(out, BlockRecord{
			Height:       prev.Height + 1,
			Hash:         hash,
			Header:       hdr,
			Filter:       f,
			FilterHeader: headers.FilterHeader(f, prev.FilterHeader),
		})
	}
	return out
}

// synthChain is the regtest genesis plus n synthetic blocks.
func synthChain(tb testing.TB, n int, seed uint64) []BlockRecord {
	return extendChain(tb, []BlockRecord{genesisRecord(tb)}, n, seed)
}

func synthView(tb testing.TB, recs []BlockRecord) *fakeView {
	v := newFakeView()
	v.commit(recs...)
	return v
}
