package bip37

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/bloom"
)

// typicalWalletFilter builds a filter the way bitcoinj does (its
// BloomFilter sizes m and k from n and p with the same formulas as
// bloom.ParamsFor, BLOOM_UPDATE_P2PUBKEY_ONLY): n elements, half 33-byte
// public keys and half their 20-byte hashes, as a key chain inserts them.
func typicalWalletFilter(t testing.TB, rng *rand.Rand, n int, p float64) *bloom.Filter {
	t.Helper()
	params, err := bloom.ParamsFor(n, p)
	if err != nil {
		t.Fatal(err)
	}
	f := bloom.New(params, rng.Uint32(), wire.BloomUpdateP2PubkeyOnly)
	for i := range n {
		size := 33
		if i%2 == 1 {
			size = 20
		}
		f.Insert(randomBytes(rng, size))
	}
	return f
}

// What bloommaxfpr and bloomminfpr do to typical wallets (README, "BIP-37"):
// the server sees only a filter's fill, and for a filter its wallet sized
// for its elements the estimate fill^k is close to the rate the wallet
// chose. So bloommaxfpr 0.1 lets every wallet through whose rate is below
// about 0.1, and bloomminfpr 0.01, the spec's privacy floor, refuses every
// wallet at bitcoinj's default rates (0.00001 since 0.13, 0.0005 before),
// the spec's own client default (0.0001) and cfscan's, and passes only
// wallets that chose about 0.012 or more. A filter sized for more
// elements than it holds (cfscan's, sized for at least 50) looks far more
// precise still.
func TestFPRPolicyOnTypicalWallets(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	bs := New(Config{MinFPR: 0.01}.WithDefaults(), Env{Now: time.Now})
	type row struct {
		who    string
		n      int
		p      float64
		passes int // of 20 filters passing bloomminfpr 0.01 (and the default bloommaxfpr 0.1); -1: about half
	}
	rows := []row{
		{"bitcoinj ≥ 0.13, new wallet (2 × 100 keys lookahead, key + hash)", 400, 0.00001, 0},
		{"bitcoinj ≥ 0.13, busy wallet", 2000, 0.00001, 0},
		{"bitcoinj < 0.13", 400, 0.0005, 0},
		{"the spec's client default, filled", 50, 0.0001, 0},
		{"a wallet at the floor exactly", 400, 0.01, -1},
		{"a wallet just above the floor", 400, 0.012, 20},
		{"a privacy-minded wallet", 400, 0.05, 20},
		{"a wallet over bloommaxfpr", 400, 0.2, 0},
	}
	var log string
	for _, r := range rows {
		var sum float64
		passed := 0
		const trials = 20
		for range trials {
			f := typicalWalletFilter(t, rng, r.n, r.p)
			sum += f.EstimatedFPR()
			if bs.checkFPR(f, "filterload") == nil {
				passed++
			}
		}
		log += fmt.Sprintf("\n  %-66s n=%4d p=%-7g estimated %.3g, passes bloomminfpr 0.01 in %d/%d", r.who, r.n, r.p, sum/trials, passed, trials)
		if r.passes >= 0 && passed != r.passes || r.passes < 0 && (passed == 0 || passed == trials) {
			t.Errorf("%s (n=%d, p=%g): %d of %d filters pass, want %d", r.who, r.n, r.p, passed, trials, r.passes)
		}
	}
	// cfscan's wallet filter, noise and all.
	f, comp, err := bloom.BuildWalletFilter([][]byte{randomBytes(rng, 20), randomBytes(rng, 20)}, bloom.DefaultPrivacy, 1, rng)
	if err != nil {
		t.Fatal(err)
	}
	if bs.checkFPR(f, "filterload") == nil {
		t.Error("cfscan's default filter passes bloomminfpr 0.01")
	}
	log += fmt.Sprintf("\n  %-66s estimated %.3g", "cfscan default (2 scripts, 5 % noise, sized for 50 elements)", comp.EstimatedFPR)
	t.Log("estimated false-positive rates of typical filters:" + log)
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}
