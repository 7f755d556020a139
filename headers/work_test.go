package headers

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
)

// TestWork pins the work of known targets (mainnet's genesis difficulty is
// 0x100010001 hashes, regtest's minimum difficulty 2, invalid targets count
// as nothing) and compares every other value with btcd's
// blockchain.CalcWork, the function neutrino sums when it weighs a reorg,
// and CompactToBig and HashToBig with btcd's.
func TestWork(t *testing.T) {
	pinned := []struct {
		bits uint32
		want int64
	}{
		{chaincfg.MainNetParams.GenesisBlock.Header.Bits, 0x100010001},
		{chaincfg.RegressionNetParams.GenesisBlock.Header.Bits, 2},
		{0x00000000, 0},
		{0x01003456, 0}, // mantissa shifted out: target 0
		{0x04923456, 0}, // sign bit: negative target
	}
	for _, tc := range pinned {
		if got := Work(tc.bits); got.Cmp(big.NewInt(tc.want)) != 0 {
			t.Errorf("Work(%#08x) = %x, want %x", tc.bits, got, tc.want)
		}
	}
	rng := rand.New(rand.NewPCG(7, 7))
	bits := []uint32{0x1b0404cb, 0x17034219, 0x1d00ffff, 0x207fffff, 0x03123456, 0x01120000, 0x02008000, 0x2100ffff}
	for range 2000 {
		exp := uint32(rng.IntN(0x22))
		bits = append(bits, exp<<24|rng.Uint32()&0x007fffff)
	}
	for _, b := range bits {
		if got, want := Work(b), blockchain.CalcWork(b); got.Cmp(want) != 0 {
			t.Errorf("Work(%#08x) = %x, btcd's CalcWork %x", b, got, want)
		}
		if got, want := CompactToBig(b), blockchain.CompactToBig(b); got.Cmp(want) != 0 {
			t.Errorf("CompactToBig(%#08x) = %x, btcd's %x", b, got, want)
		}
	}
}

// HashToBig reads hashes as btcd's blockchain.HashToBig does.
func TestHashToBig(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for range 100 {
		var h chainhash.Hash
		for i := range h {
			h[i] = byte(rng.UintN(256))
		}
		if got, want := HashToBig(&h), blockchain.HashToBig(&h); got.Cmp(want) != 0 {
			t.Fatalf("HashToBig(%s) = %x, btcd's %x", h, got, want)
		}
	}
}
