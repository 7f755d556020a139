package headers

import (
	"errors"
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/testvectors"
)

func rulesOf(p *chaincfg.Params) *DifficultyRules {
	return &DifficultyRules{
		PowLimit: p.PowLimit, PowLimitBits: p.PowLimitBits,
		TargetTimespan: p.TargetTimespan, TargetTimePerBlock: p.TargetTimePerBlock,
		RetargetAdjustmentFactor: p.RetargetAdjustmentFactor,
		ReduceMinDifficulty:      p.ReduceMinDifficulty, MinDiffReductionTime: p.MinDiffReductionTime,
		NoRetargeting: p.PoWNoRetargeting, EnforceBIP94: p.EnforceBIP94,
	}
}

func atOf(hdrs []wire.BlockHeader) func(uint32) (DifficultyHeader, error) {
	return func(h uint32) (DifficultyHeader, error) {
		if int(h) >= len(hdrs) {
			return DifficultyHeader{}, fmt.Errorf("no header at %d", h)
		}
		return DifficultyHeader{Bits: hdrs[h].Bits, Timestamp: hdrs[h].Timestamp.Unix()}, nil
	}
}

// TestNextBitsMainnet checks every header of 2009–2010 mainnet (seven
// retargets, the first ones that moved the difficulty) against the rules:
// the bits each carries are the bits NextBits requires, and its hash meets
// them.
func TestNextBitsMainnet(t *testing.T) {
	blocks := testvectors.MainnetBlocks(t)
	hdrs := make([]wire.BlockHeader, len(blocks))
	for i, b := range blocks {
		hdrs[i] = b.Header
	}
	r := rulesOf(&chaincfg.MainNetParams)
	retargets := 0
	for h := 1; h < len(hdrs); h++ {
		want, err := NextBits(r, uint32(h), hdrs[h].Timestamp.Unix(), atOf(hdrs))
		if err != nil {
			t.Fatalf("height %d: %v", h, err)
		}
		if want != hdrs[h].Bits {
			t.Fatalf("height %d: NextBits %08x, header carries %08x", h, want, hdrs[h].Bits)
		}
		hash := hdrs[h].BlockHash()
		if err := CheckProofOfWork(&hash, hdrs[h].Bits, r.PowLimit); err != nil {
			t.Fatalf("height %d: %v", h, err)
		}
		if uint32(h)%r.BlocksPerRetarget() == 0 {
			retargets++
		}
	}
	if retargets < 7 {
		t.Fatalf("%d retargets: the data does not exercise the rule", retargets)
	}
	// Every period of 2009-2010's first 14,131 blocks was slower than two
	// weeks (the target stays at the limit, clamped); one a week long
	// must double the difficulty.
	h := 2016 * 6
	moved := append([]wire.BlockHeader(nil), hdrs[:h+1]...)
	moved[h-1].Timestamp = moved[h-2016].Timestamp.Add(7 * 24 * time.Hour)
	got, err := NextBits(r, uint32(h), moved[h].Timestamp.Unix(), atOf(moved))
	if err != nil || got == hdrs[h].Bits {
		t.Fatalf("retarget with a day more: bits %08x (err %v), the real header's %08x", got, err, hdrs[h].Bits)
	}
}

// TestNextBitsRules covers the rules the mainnet data does not: no
// retargeting (regtest), simnet's minimum-difficulty blocks, the testnets' minimum-difficulty blocks
// and the walk back past them, the clamps.
func TestNextBitsRules(t *testing.T) {
	test3 := rulesOf(&chaincfg.TestNet3Params)
	per := test3.BlocksPerRetarget()
	const normal = 0x1c0fffff
	base := int64(1_600_000_000)
	// A testnet period: normal blocks, then two minimum-difficulty ones.
	chain := func() []DifficultyHeader {
		c := make([]DifficultyHeader, per+5)
		for i := range c {
			c[i] = DifficultyHeader{Bits: normal, Timestamp: base + int64(i)*600}
		}
		c[per+3].Bits = test3.PowLimitBits
		c[per+4].Bits = test3.PowLimitBits
		return c
	}
	at := func(c []DifficultyHeader) func(uint32) (DifficultyHeader, error) {
		return func(h uint32) (DifficultyHeader, error) { return c[h], nil }
	}
	tests := []struct {
		name   string
		rules  *DifficultyRules
		height uint32
		time   int64
		want   uint32
	}{
		{"regtest never retargets", rulesOf(&chaincfg.RegressionNetParams), 2016, base, chaincfg.RegressionNetParams.PowLimitBits},
		{"simnet late block is minimum difficulty", rulesOf(&chaincfg.SimNetParams), per + 5, base + int64(per+4)*600 + 1201, chaincfg.SimNetParams.PowLimitBits},
		{"testnet late block may be minimum difficulty", test3, per + 5, base + int64(per+4)*600 + 1201, test3.PowLimitBits},
		{"testnet on-time block walks back past minimum-difficulty blocks", test3, per + 5, base + int64(per+4)*600 + 600, normal},
		{"testnet on-time block after a normal one keeps its bits", test3, per + 3, base + int64(per+2)*600 + 600, normal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NextBits(tc.rules, tc.height, tc.time, at(chain()))
			if err != nil || got != tc.want {
				t.Fatalf("NextBits = %08x, %v; want %08x", got, err, tc.want)
			}
		})
	}
	// Clamps: a period four times too slow or more is clamped at factor 4,
	// and the result never passes the proof-of-work limit.
	main := rulesOf(&chaincfg.MainNetParams)
	span := int64(main.TargetTimespan / time.Second)
	slow := func(mult int64, bits uint32) []DifficultyHeader {
		c := make([]DifficultyHeader, 2017)
		for i := range c {
			c[i] = DifficultyHeader{Bits: bits, Timestamp: base + int64(i)*span*mult/2015}
		}
		return c
	}
	four, _ := NextBits(main, 2016, base, at(slow(4, 0x1b0404cb)))
	ten, _ := NextBits(main, 2016, base, at(slow(10, 0x1b0404cb)))
	if four != ten {
		t.Fatalf("a period 10x slow gives %08x, 4x slow %08x: not clamped", ten, four)
	}
	if got, _ := NextBits(main, 2016, base, at(slow(4, main.PowLimitBits))); got != main.PowLimitBits {
		t.Fatalf("retarget above the limit gives %08x, want the limit %08x", got, main.PowLimitBits)
	}
}

func TestCheckProofOfWork(t *testing.T) {
	g := chaincfg.MainNetParams.GenesisBlock.Header
	hash := g.BlockHash()
	limit := chaincfg.MainNetParams.PowLimit
	if err := CheckProofOfWork(&hash, g.Bits, limit); err != nil {
		t.Fatalf("genesis: %v", err)
	}
	for name, bits := range map[string]uint32{"harder than the hash": 0x1a00ffff, "above the limit": 0x1e00ffff, "zero": 0, "negative": 0x1d80ffff} {
		if err := CheckProofOfWork(&hash, bits, limit); !errors.Is(err, ErrBadProofOfWork) {
			t.Errorf("%s: %v, want ErrBadProofOfWork", name, err)
		}
	}
}

func TestBigToCompactRoundTrip(t *testing.T) {
	for _, bits := range []uint32{0x1d00ffff, 0x1b0404cb, 0x207fffff, 0x1c0fffff, 0x03123456, 0x02008000, 0x01120000} {
		if got := BigToCompact(CompactToBig(bits)); got != bits {
			t.Errorf("BigToCompact(CompactToBig(%08x)) = %08x", bits, got)
		}
	}
	if got := BigToCompact(new(big.Int)); got != 0 {
		t.Errorf("zero: %08x", got)
	}
}
