package nodetest

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"
)

// Ctx is a context cancelled after 20 seconds or when the test ends.
func Ctx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Logger writes at info level and above to the test's log.
func Logger(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
}

// EqualScripts reports whether a and b hold the same scripts in the same
// order.
func EqualScripts(a, b [][]byte) bool { return slices.EqualFunc(a, b, bytes.Equal) }

// CmpHash orders hashes by their bytes.
func CmpHash(a, b chainhash.Hash) int { return bytes.Compare(a[:], b[:]) }

// MerkleRoot computes the block merkle root over the txids of txs
// (Bitcoin's duplicate-last-on-odd rule): the plain reference the
// production code is checked against.
func MerkleRoot(txs []*wire.MsgTx) chainhash.Hash {
	level := make([]chainhash.Hash, len(txs))
	for i, tx := range txs {
		level[i] = tx.TxHash()
	}
	var buf [2 * chainhash.HashSize]byte
	for len(level) > 1 {
		if len(level)%2 == 1 {
			level = append(level, level[len(level)-1])
		}
		next := level[:len(level)/2]
		for i := range next {
			copy(buf[:chainhash.HashSize], level[2*i][:])
			copy(buf[chainhash.HashSize:], level[2*i+1][:])
			next[i] = chainhash.DoubleHashH(buf[:])
		}
		level = next
	}
	return level[0]
}
